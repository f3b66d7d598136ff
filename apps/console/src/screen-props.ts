/** What the shell (shell.tsx) passes to every screen of the registry in screens.ts. */
export interface ScreenProps {
  /** The `:name` parts of the matched path. */
  params: Record<string, string>;
}
