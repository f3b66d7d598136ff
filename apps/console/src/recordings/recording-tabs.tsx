import { Tabs } from '../components/tabs';

const SECTIONS = [
  { path: 'recordings', label: 'Recordings' },
  { path: 'recordings/playlists', label: 'Playlists' },
];

export function RecordingTabs() {
  return <Tabs label="Recording sections" tabs={SECTIONS} />;
}
