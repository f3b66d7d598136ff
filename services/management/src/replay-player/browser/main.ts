/**
 * The replay page (`/replay/<session id>[?project=<id>]`): asks for a personal API key when the tab has none,
 * loads the recording's metadata and snapshots, and plays one window at a time with rrweb-player. Everything
 * the API returns is written with textContent, never as markup.
 */
import Player from 'rrweb-player';
import 'rrweb-player/dist/style.css';
import './page.css';
import { ApiError, RecordingApi, type RecordingMetadata } from './api';
import { parseSnapshotLines, playableWindows, type RecordingWindow } from './recording';

/** The sessionStorage key that holds the personal API key for this tab. */
const KEY_STORAGE = 'plover.apiKey';
/** The width of the replay at most; its height follows a 16:10 screen. */
const MAX_WIDTH = 1024;

function element<T extends HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

const form = element<HTMLFormElement>('key-form');
const keyInput = element<HTMLInputElement>('key-input');
const status = element<HTMLParagraphElement>('status');
const recording = element<HTMLElement>('recording');
const windowChoice = element<HTMLLabelElement>('window-choice');
const windowSelect = element<HTMLSelectElement>('window-select');
const playerTarget = element<HTMLDivElement>('player');
const metadataList = element<HTMLDListElement>('metadata');

const sessionId = decodeURIComponent(location.pathname.split('/').pop() ?? '');
const project = new URLSearchParams(location.search).get('project') ?? '@current';
let player: Player | undefined;

declare module 'rrweb-player' {
  /** Svelte's component method, whose types come from svelte, which rrweb-player's build leaves out. */
  interface Player {
    $destroy(): void;
  }
}

function showStatus(text: string): void {
  status.textContent = text;
  status.hidden = text === '';
}

function askForKey(reason: string): void {
  sessionStorage.removeItem(KEY_STORAGE);
  recording.hidden = true;
  form.hidden = false;
  showStatus(reason);
  keyInput.focus();
}

function formatDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Math.floor(seconds % 60);
  const pad = (n: number): string => String(n).padStart(2, '0');
  if (h > 0) return `${h}h ${pad(m)}m ${pad(s)}s`;
  return m > 0 ? `${m}m ${pad(s)}s` : `${s}s`;
}

function personLabel(meta: RecordingMetadata): string {
  const email = meta.person?.properties?.email;
  return meta.person?.name ?? (typeof email === 'string' ? email : meta.distinct_id);
}

function showMetadata(meta: RecordingMetadata): void {
  const rows: Array<[field: string, label: string, value: string]> = [
    ['person', 'Person', personLabel(meta)],
    ['distinct_id', 'Distinct ID', meta.distinct_id],
    ['start_time', 'Started', new Date(meta.start_time).toLocaleString()],
    ['start_url', 'Start URL', meta.start_url ?? '—'],
    ['recording_duration', 'Duration', formatDuration(meta.recording_duration)],
    ['active_seconds', 'Active time', formatDuration(meta.active_seconds)],
    ['click_count', 'Clicks', String(meta.click_count)],
    ['keypress_count', 'Keypresses', String(meta.keypress_count)],
    ['console_error_count', 'Console errors', String(meta.console_error_count)],
  ];
  metadataList.replaceChildren(
    ...rows.flatMap(([field, label, value]) => {
      const term = document.createElement('dt');
      term.textContent = label;
      const description = document.createElement('dd');
      description.dataset.field = field;
      description.textContent = value;
      return [term, description];
    }),
  );
}

function play(window: RecordingWindow): void {
  player?.$destroy();
  playerTarget.replaceChildren();
  const width = Math.min(MAX_WIDTH, playerTarget.clientWidth || MAX_WIDTH);
  player = new Player({
    target: playerTarget,
    props: { events: window.events, width, height: Math.round((width * 10) / 16), autoPlay: false, skipInactive: true },
  });
}

function showWindows(windows: RecordingWindow[]): void {
  windowSelect.replaceChildren(
    ...windows.map((window, index) => {
      const option = document.createElement('option');
      option.value = String(index);
      const starts = new Date(window.start).toLocaleTimeString();
      option.textContent = `Window ${index + 1}: from ${starts}, ${formatDuration((window.end - window.start) / 1000)}`;
      return option;
    }),
  );
  windowChoice.hidden = windows.length < 2;
  windowSelect.onchange = () => play(windows[Number(windowSelect.value)]!);
  play(windows[0]!);
}

async function load(key: string): Promise<void> {
  form.hidden = true;
  showStatus('Loading the recording…');
  const api = new RecordingApi(location.href, project, sessionId, key);
  try {
    const [meta, blocks] = await Promise.all([api.metadata(), api.snapshots()]);
    showMetadata(meta);
    const windows = await playableWindows(blocks.flatMap(parseSnapshotLines));
    recording.hidden = false;
    if (windows.length === 0) {
      showStatus('This recording has no full snapshot yet, so there is nothing to replay.');
      return;
    }
    showStatus('');
    showWindows(windows);
  } catch (error) {
    if (error instanceof ApiError && error.refusedKey) askForKey(`The key was refused: ${error.message}`);
    else showStatus(`The recording could not be loaded: ${error instanceof Error ? error.message : String(error)}`);
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (key === '') return;
  sessionStorage.setItem(KEY_STORAGE, key);
  keyInput.value = '';
  void load(key);
});

element<HTMLElement>('session-id').textContent = sessionId;
const stored = sessionStorage.getItem(KEY_STORAGE);
if (stored) void load(stored);
else askForKey('');
