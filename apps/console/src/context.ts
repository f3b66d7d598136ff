import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ApiClient } from './api/client';
import type { Project } from './api/types';

/** What every screen gets from the shell. */
export interface ConsoleState {
  client: ApiClient;
  /** The project in the URL: an id, or `@current` (the key's user's current project). */
  projectId: string;
  /** That project, when the key may list projects and it is one of them. */
  project: Project | undefined;
  /** The projects the key sees; null when it lacks `project:read`. */
  projects: Project[] | null;
}

export const ConsoleContext = createContext<ConsoleState | null>(null);

export function useConsole(): ConsoleState {
  const state = useContext(ConsoleContext);
  if (!state) throw new Error('useConsole outside the console shell');
  return state;
}
