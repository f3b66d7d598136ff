/**
 * A project's session replay settings as the settings form edits them (percentages and seconds as typed) and as the
 * project PATCH takes them (a rate from 0 to 1, milliseconds, nested configs). Parts of a config the form does not
 * show (masking selectors, a flag variant) are kept as they were.
 */
import type { FeatureFlag, ProjectPatch, ProjectSettings, ReplaySettings } from '../api/types';

export interface ReplayForm {
  optIn: boolean;
  /** 0–100; empty records every session. */
  sampleRate: string;
  /** 0–30 seconds; empty sends every session however short. */
  minDuration: string;
  consoleLogs: boolean;
  performance: boolean;
  retention: ReplaySettings['session_recording_retention_period'];
  maskAllInputs: boolean;
  recordCanvas: boolean;
  /** The id of the flag that must be on for a user to be recorded; empty for none. */
  linkedFlag: string;
}

export const RETENTION_PERIODS: ReadonlyArray<{ value: ReplayForm['retention']; label: string }> = [
  { value: '30d', label: '30 days' },
  { value: '90d', label: '90 days' },
  { value: '1y', label: '1 year' },
  { value: '5y', label: '5 years' },
];

const MAX_MIN_DURATION_SECONDS = 30;

/** The form of a project's settings (PostHog's defaults where a setting is missing). */
export function replayForm(project: ProjectSettings): ReplayForm {
  const rate = project.session_recording_sample_rate;
  const minimum = project.session_recording_minimum_duration_milliseconds;
  return {
    optIn: project.session_recording_opt_in ?? false,
    sampleRate: rate === null || rate === undefined ? '' : String(Math.round(rate * 10_000) / 100),
    minDuration: minimum === null || minimum === undefined ? '' : String(minimum / 1000),
    consoleLogs: project.capture_console_log_opt_in ?? true,
    performance: project.capture_performance_opt_in ?? true,
    retention: project.session_recording_retention_period ?? '30d',
    maskAllInputs: project.session_recording_masking_config?.maskAllInputs ?? true,
    recordCanvas: project.session_replay_config?.record_canvas ?? false,
    linkedFlag: project.session_recording_linked_flag ? String(project.session_recording_linked_flag.id) : '',
  };
}

const inRange = (text: string, max: number) => text.trim() === '' || (Number.isFinite(Number(text)) && Number(text) >= 0 && Number(text) <= max);

/** What stops the form from being saved, or null. */
export function replayProblem(form: ReplayForm): string | null {
  if (!inRange(form.sampleRate, 100)) return 'The sample rate is a percentage from 0 to 100 (empty: every session).';
  if (!inRange(form.minDuration, MAX_MIN_DURATION_SECONDS)) return `The minimum duration is from 0 to ${MAX_MIN_DURATION_SECONDS} seconds (empty: none).`;
  return null;
}

/** The PATCH body of a form without problems; `flags` name the linked flag's key. */
export function replayPatch(form: ReplayForm, project: ProjectSettings, flags: readonly FeatureFlag[]): ProjectPatch {
  const linked = project.session_recording_linked_flag ?? null;
  const flag = flags.find((item) => String(item.id) === form.linkedFlag);
  return {
    session_recording_opt_in: form.optIn,
    session_recording_sample_rate: form.sampleRate.trim() === '' ? null : Math.round(Number(form.sampleRate) * 100) / 10_000,
    session_recording_minimum_duration_milliseconds: form.minDuration.trim() === '' ? null : Math.round(Number(form.minDuration) * 1000),
    capture_console_log_opt_in: form.consoleLogs,
    capture_performance_opt_in: form.performance,
    session_recording_retention_period: form.retention,
    session_recording_masking_config: { ...project.session_recording_masking_config, maskAllInputs: form.maskAllInputs },
    session_replay_config: { ...project.session_replay_config, record_canvas: form.recordCanvas },
    session_recording_linked_flag:
      form.linkedFlag === '' ? null : linked && String(linked.id) === form.linkedFlag ? linked : flag ? { id: flag.id, key: flag.key } : linked,
  };
}
