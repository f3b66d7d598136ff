/**
 * The management API as the player page calls it: a personal API key as a bearer token (never a cookie),
 * project routes addressed relative to the page, so the page works under any path prefix it is served at.
 */

/** An error answer of the API, with PostHog's `detail` text when the body had one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }

  /** The key was refused (unknown, revoked, or without the scope or project). */
  get refusedKey(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

export interface RecordingMetadata {
  id: string;
  distinct_id: string;
  start_time: string;
  recording_duration: number;
  active_seconds: number;
  click_count: number;
  keypress_count: number;
  console_error_count: number;
  start_url: string | null;
  person: { name?: string | null; distinct_ids?: string[]; properties?: Record<string, unknown> } | null;
}

interface SnapshotSources {
  sources: Array<{ source: string; blob_key: string }>;
}

/** Blob keys asked for in one snapshots request: the most a personal API key may ask for at once. */
const BLOB_KEYS_PER_REQUEST = 20;

export class RecordingApi {
  private readonly base: URL;

  /** `page` is the player page's URL (`…/replay/<session id>`); the API is at `…/api/` beside `replay/`. */
  constructor(
    page: string,
    project: string,
    sessionId: string,
    private readonly key: string,
  ) {
    this.base = new URL(`../api/projects/${encodeURIComponent(project)}/session_recordings/${encodeURIComponent(sessionId)}/`, page);
  }

  private async get(path: string, params: Record<string, string> = {}): Promise<Response> {
    const url = new URL(path, this.base);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    const response = await fetch(url, { headers: { Authorization: `Bearer ${this.key}` }, credentials: 'omit' });
    if (response.ok) return response;
    const body = (await response.json().catch(() => undefined)) as { detail?: unknown } | undefined;
    throw new ApiError(response.status, typeof body?.detail === 'string' ? body.detail : `${response.status} ${response.statusText}`);
  }

  async metadata(): Promise<RecordingMetadata> {
    return (await (await this.get('')).json()) as RecordingMetadata;
  }

  /** Every `blob_v2` block of the recording as JSONL text, fetched in consecutive ranges of blob keys. */
  async snapshots(): Promise<string[]> {
    const { sources } = (await (await this.get('snapshots')).json()) as SnapshotSources;
    const keys = sources.filter((source) => source.source === 'blob_v2').map((source) => Number(source.blob_key));
    const ranges: Array<[number, number]> = [];
    for (let i = 0; i < keys.length; i += BLOB_KEYS_PER_REQUEST) ranges.push([keys[i]!, keys[Math.min(i + BLOB_KEYS_PER_REQUEST, keys.length) - 1]!]);
    return Promise.all(
      ranges.map(async ([start, end]) => (await this.get('snapshots', { source: 'blob_v2', start_blob_key: String(start), end_blob_key: String(end) })).text()),
    );
  }
}
