import { useConsole } from '../context';
import { projectPath } from '../paths';
import { Link, useLocation } from '../router';

const SECTIONS = [
  { path: 'feature_flags', label: 'Flags' },
  { path: 'feature_flags/cohorts', label: 'Cohorts' },
  { path: 'feature_flags/early_access', label: 'Early access' },
  { path: 'feature_flags/surveys', label: 'Surveys' },
];

/** The lists under Feature flags: flags and the objects that target users alongside them. */
export function SectionTabs() {
  const { projectId } = useConsole();
  const { path } = useLocation();
  return (
    <nav class="tabs" aria-label="Feature flag sections">
      <ul>
        {SECTIONS.map((section) => {
          const href = projectPath(projectId, section.path);
          return (
            <li key={section.path}>
              <Link href={href} aria-current={path === href ? 'page' : undefined}>
                {section.label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
