import { Tabs } from '../components/tabs';

const SECTIONS = [
  { path: 'feature_flags', label: 'Flags' },
  { path: 'feature_flags/cohorts', label: 'Cohorts' },
  { path: 'feature_flags/early_access', label: 'Early access' },
  { path: 'feature_flags/surveys', label: 'Surveys' },
];

/** The lists under Feature flags: flags and the objects that target users alongside them. */
export function SectionTabs() {
  return <Tabs label="Feature flag sections" tabs={SECTIONS} />;
}
