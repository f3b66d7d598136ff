/**
 * The scopes a new personal API key gets, as the settings screen offers them: everything (`*`), or a level per
 * kind of object (`<object>:read`, `<object>:write`, which includes read).
 */

export type Level = 'none' | 'read' | 'write';

/** The kinds of object Plover's API serves, in the order the form lists them. */
export const SCOPE_OBJECTS: ReadonlyArray<{ object: string; label: string }> = [
  { object: 'project', label: 'Projects and their settings' },
  { object: 'query', label: 'Events' },
  { object: 'person', label: 'Persons' },
  { object: 'group', label: 'Groups' },
  { object: 'insight', label: 'Insights' },
  { object: 'feature_flag', label: 'Feature flags' },
  { object: 'cohort', label: 'Cohorts' },
  { object: 'early_access_feature', label: 'Early access features' },
  { object: 'survey', label: 'Surveys' },
  { object: 'session_recording', label: 'Recordings' },
  { object: 'session_recording_playlist', label: 'Recording playlists' },
  { object: 'access_control', label: 'Access controls' },
  { object: 'personal_api_key', label: 'Personal API keys' },
  { object: 'user', label: 'Your user' },
];

export interface KeyScopes {
  all: boolean;
  levels: Record<string, Level>;
}

export function newKeyScopes(): KeyScopes {
  return { all: false, levels: Object.fromEntries(SCOPE_OBJECTS.map(({ object }) => [object, 'none'])) };
}

/** The `scopes` of the API's create body; empty when nothing is chosen (the API needs at least one). */
export function scopesOf(choice: KeyScopes): string[] {
  if (choice.all) return ['*'];
  return SCOPE_OBJECTS.flatMap(({ object }) => {
    const level = choice.levels[object] ?? 'none';
    return level === 'none' ? [] : [`${object}:${level}`];
  });
}

/** A key's scopes in a few words: `All access`, or `persons: write, events: read`. */
export function describeScopes(scopes: readonly string[]): string {
  if (scopes.length === 0 || scopes.includes('*')) return 'All access';
  return scopes
    .map((scope) => {
      const [object, level] = scope.split(':');
      const label = SCOPE_OBJECTS.find((entry) => entry.object === object)?.label ?? object;
      return `${label}: ${level}`;
    })
    .join(', ');
}
