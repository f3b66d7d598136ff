import { sectionDefaults, sections } from '@plover/config';
import { DEFAULT_INGESTION_SETTINGS } from '../src/consumer';
import { DEFAULT_REPLAY_SETTINGS } from '../src/replay/consumer';

describe('ingestion defaults', () => {
  it('are the config schema defaults: a consumer given no settings behaves as one given the default config', () => {
    const config = sectionDefaults(sections.ingestion);
    expect(config.lingerMs).toBe(200);
    expect(DEFAULT_INGESTION_SETTINGS).toMatchObject(config);
    expect(DEFAULT_REPLAY_SETTINGS).toMatchObject({ lingerMs: config.lingerMs, retryBackoffMs: config.retryBackoffMs });
  });
});
