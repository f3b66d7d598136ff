/**
 * The signed-in frame: the top bar (navigation from the screen registry, project switcher, sign-out) and the
 * screen of the current path. `/` goes to the user's current project. A project the key may not see shows the
 * server's answer in place of the screen; a key without `project:read` still gets its screens.
 */
import { useEffect, useRef } from 'preact/hooks';
import { ApiError, type ApiClient } from './api/client';
import { operations } from './api/operations';
import type { Project, ProjectSettings } from './api/types';
import { Async } from './components/async';
import { PageHeader } from './components/page-header';
import { EmptyState } from './components/empty-state';
import { ConsoleContext, type ConsoleState } from './context';
import { useLoad, type Load } from './hooks';
import { matchPath, projectPath, splitProjectPath } from './paths';
import { Link, navigate, useLocation } from './router';
import { screens } from './screens';

/** Every project the key sees (null without `project:read`). */
async function loadProjects(client: ApiClient, signal: AbortSignal): Promise<Project[] | null> {
  try {
    return (await client.call(operations.listProjects, {}, { query: { limit: 1000 }, signal })).results;
  } catch (error) {
    if (error instanceof ApiError && error.missingScope) return null;
    throw error;
  }
}

/** The project `/` opens: the only one, else the user's current one, else the first; `@current` when projects cannot be listed. */
async function landingProject(client: ApiClient, projects: Project[] | null, signal: AbortSignal): Promise<string> {
  if (projects === null || projects.length === 0) return '@current';
  if (projects.length === 1) return String(projects[0]!.id);
  const team = await client.call(operations.currentUser, {}, { signal }).then(
    (user) => user.team,
    () => null,
  );
  return String(projects.find((project) => project.id === team?.id)?.id ?? projects[0]!.id);
}

/** The project of the address (undefined when the key lacks `project:read`: the screen still opens). */
async function loadProject(client: ApiClient, projectId: string | undefined, signal: AbortSignal): Promise<ProjectSettings | undefined> {
  if (projectId === undefined) return undefined;
  try {
    return await client.call(operations.getProject, { project_id: projectId }, { signal });
  } catch (error) {
    if (error instanceof ApiError && error.missingScope) return undefined;
    throw error;
  }
}

export function Shell({ client, onSignOut }: { client: ApiClient; onSignOut: () => void }) {
  const { path } = useLocation();
  const projects = useLoad((signal) => loadProjects(client, signal), [client]);
  const located = splitProjectPath(path);
  // Asked beside the list, not after it: a screen's own requests wait for both.
  const project = useLoad((signal) => loadProject(client, located?.projectId, signal), [client, located?.projectId]);
  const list = projects.status === 'ok' ? projects.data : null;

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link href="/" class="brand">
          <span class="brand-mark" aria-hidden="true" />
          Plover
        </Link>
        {located && <Navigation projectId={located.projectId} rest={located.rest} />}
        <div class="topbar-end">
          {located && list && list.length > 1 && <ProjectSwitcher projects={list} projectId={located.projectId} rest={located.rest} />}
          <button type="button" class="secondary" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Async value={projects} onRetry={projects.reload}>
          {(data) =>
            located ? (
              <ProjectScreen client={client} project={project} projects={data} projectId={located.projectId} rest={located.rest} />
            ) : path === '/' ? (
              <Landing client={client} projects={data} />
            ) : (
              <NotFound />
            )
          }
        </Async>
      </main>
    </>
  );
}

function Landing({ client, projects }: { client: ApiClient; projects: Project[] | null }) {
  const target = useLoad((signal) => landingProject(client, projects, signal), [client, projects]);
  useEffect(() => {
    if (target.status === 'ok') navigate(projectPath(target.data), { replace: true });
  }, [target]);
  return <Async value={target}>{() => null}</Async>;
}

function Navigation({ projectId, rest }: { projectId: string; rest: string }) {
  return (
    <nav aria-label="Main">
      <ul>
        {screens
          .filter((screen) => screen.nav)
          .map((screen) => {
            const current = screen.path === '' ? rest === '' : rest === screen.path || rest.startsWith(`${screen.path}/`);
            return (
              <li key={screen.path}>
                <Link href={projectPath(projectId, screen.path)} aria-current={current ? 'page' : undefined}>
                  {screen.title}
                </Link>
              </li>
            );
          })}
      </ul>
    </nav>
  );
}

function ProjectSwitcher({ projects, projectId, rest }: { projects: Project[]; projectId: string; rest: string }) {
  // Another project has other objects: switch to the same section, not the same object.
  const section = rest.split('/')[0] ?? '';
  return (
    <div class="project-switcher">
      <label for="project-switcher">Project</label>
      <select id="project-switcher" value={projectId} onChange={(event) => navigate(projectPath(event.currentTarget.value, section))}>
        {!projects.some((project) => String(project.id) === projectId) && <option value={projectId}>{projectId}</option>}
        {projects.map((project) => (
          <option key={project.id} value={String(project.id)}>
            {project.name}
          </option>
        ))}
      </select>
    </div>
  );
}

function ProjectScreen({
  client,
  project,
  projects,
  projectId,
  rest,
}: {
  client: ApiClient;
  project: Load<ProjectSettings | undefined>;
  projects: Project[] | null;
  projectId: string;
  rest: string;
}) {
  // The project itself answers before the screen asks anything: a project out of the key's reach is the server's
  // 403 or 404, shown once.
  const found = screens.map((screen) => ({ screen, params: matchPath(screen.path, rest) })).find((match) => match.params !== null);
  useFocusOnNavigation(rest);
  useEffect(() => {
    const name = project.status === 'ok' ? project.data?.name : undefined;
    document.title = [found?.screen.title ?? 'Not found', name, 'Plover'].filter(Boolean).join(' · ');
  }, [found, project]);

  return (
    <Async value={project} onRetry={project.reload}>
      {(data) => {
        const state: ConsoleState = { client, projectId, project: data ?? projects?.find((item) => String(item.id) === projectId), projects };
        if (!found) return <NotFound />;
        const Screen = found.screen.component;
        return (
          <ConsoleContext.Provider value={state}>
            <Screen params={found.params!} />
          </ConsoleContext.Provider>
        );
      }}
    </Async>
  );
}

/** After a client-side navigation (not the first render), focus the new screen's heading, as a page load would. */
function useFocusOnNavigation(key: string): void {
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    const heading = document.querySelector<HTMLElement>('main h1');
    (heading ?? document.getElementById('main'))?.focus();
  }, [key]);
}

function NotFound() {
  return (
    <>
      <PageHeader title="Page not found" />
      <EmptyState title="There is no console page at this address.">
        <Link href="/">Go to the overview</Link>
      </EmptyState>
    </>
  );
}
