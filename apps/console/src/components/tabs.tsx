import { useConsole } from '../context';
import { projectPath } from '../paths';
import { Link, useLocation } from '../router';

/** Links between the screens of one section (a second row under the page heading), the current one marked. */
export function Tabs({ label, tabs }: { label: string; tabs: ReadonlyArray<{ path: string; label: string }> }) {
  const { projectId } = useConsole();
  const { path } = useLocation();
  return (
    <nav class="tabs" aria-label={label}>
      <ul>
        {tabs.map((tab) => {
          const href = projectPath(projectId, tab.path);
          return (
            <li key={tab.path}>
              <Link href={href} aria-current={path === href ? 'page' : undefined}>
                {tab.label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
