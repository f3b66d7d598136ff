import type { FeatureFlag, ProjectSettings } from '../src/api/types';
import { describeScopes, newKeyScopes, scopesOf } from '../src/settings/key-scopes';
import { replayForm, replayPatch, replayProblem } from '../src/settings/replay-form';

const project: ProjectSettings = {
  id: 1,
  uuid: 'u',
  name: 'Shop',
  api_token: 'phc_x',
  timezone: 'UTC',
  session_recording_opt_in: true,
  session_recording_sample_rate: 0.255,
  session_recording_minimum_duration_milliseconds: 1500,
  session_recording_linked_flag: { id: 4, key: 'beta', variant: 'on' },
  session_recording_masking_config: { maskAllInputs: false, blockSelector: '.secret' },
  session_replay_config: { record_canvas: true },
  capture_console_log_opt_in: false,
  capture_performance_opt_in: true,
  session_recording_retention_period: '1y',
};

const flag = (id: number, key: string) => ({ id, key }) as FeatureFlag;

describe('the session replay settings form', () => {
  it('shows rates as percentages and durations in seconds, and writes back exactly what it read', () => {
    const form = replayForm(project);
    expect([form.sampleRate, form.minDuration, form.linkedFlag, form.maskAllInputs, form.recordCanvas]).toEqual(['25.5', '1.5', '4', false, true]);
    expect(replayProblem(form)).toBeNull();
    expect(replayPatch(form, project, [])).toEqual({
      session_recording_opt_in: true,
      session_recording_sample_rate: 0.255,
      session_recording_minimum_duration_milliseconds: 1500,
      capture_console_log_opt_in: false,
      capture_performance_opt_in: true,
      session_recording_retention_period: '1y',
      session_recording_masking_config: { maskAllInputs: false, blockSelector: '.secret' },
      session_replay_config: { record_canvas: true },
      session_recording_linked_flag: { id: 4, key: 'beta', variant: 'on' },
    });
  });

  it('writes empty numbers as no limit, another flag by its key, and no flag as null', () => {
    const form = { ...replayForm(project), sampleRate: '', minDuration: ' ', linkedFlag: '9', maskAllInputs: true };
    expect(replayPatch(form, project, [flag(9, 'replay-me')])).toEqual(
      expect.objectContaining({
        session_recording_sample_rate: null,
        session_recording_minimum_duration_milliseconds: null,
        session_recording_linked_flag: { id: 9, key: 'replay-me' },
        session_recording_masking_config: { maskAllInputs: true, blockSelector: '.secret' },
      }),
    );
    expect(replayPatch({ ...form, linkedFlag: '' }, project, []).session_recording_linked_flag).toBeNull();
  });

  it('takes PostHog’s defaults for a project without settings', () => {
    const bare: ProjectSettings = { id: 1, uuid: 'u', name: 'Shop', api_token: 'phc_x', timezone: 'UTC' };
    expect(replayForm(bare)).toEqual({
      optIn: false,
      sampleRate: '',
      minDuration: '',
      consoleLogs: true,
      performance: true,
      retention: '30d',
      maskAllInputs: true,
      recordCanvas: false,
      linkedFlag: '',
    });
  });

  it.each([
    [{ sampleRate: '101' }, 'The sample rate is a percentage from 0 to 100 (empty: every session).'],
    [{ sampleRate: 'half' }, 'The sample rate is a percentage from 0 to 100 (empty: every session).'],
    [{ minDuration: '31' }, 'The minimum duration is from 0 to 30 seconds (empty: none).'],
    [{ minDuration: '-1' }, 'The minimum duration is from 0 to 30 seconds (empty: none).'],
  ])('refuses %j', (fields, problem) => {
    expect(replayProblem({ ...replayForm(project), ...fields })).toBe(problem);
  });
});

describe('a new key’s scopes', () => {
  it('are everything, or a level per object', () => {
    const choice = newKeyScopes();
    expect(scopesOf(choice)).toEqual([]);
    expect(scopesOf({ ...choice, all: true })).toEqual(['*']);
    expect(scopesOf({ ...choice, levels: { ...choice.levels, person: 'write', query: 'read' } })).toEqual(['query:read', 'person:write']);
  });

  it('are described in words', () => {
    expect(describeScopes(['*'])).toBe('All access');
    expect(describeScopes([])).toBe('All access');
    expect(describeScopes(['person:read', 'feature_flag:write', 'notebook:read'])).toBe('Persons: read, Feature flags: write, notebook: read');
  });
});
