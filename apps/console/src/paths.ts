/** Matching client paths against route patterns (`insights/:shortId`); kept apart from the DOM for tests. */

/** The parameters of `path` under `pattern`, or null when it does not match. Segments are URI-decoded. */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const want = segments(pattern);
  const have = segments(path);
  if (want.length !== have.length) return null;
  const params: Record<string, string> = {};
  for (const [index, part] of want.entries()) {
    const value = have[index]!;
    if (part.startsWith(':')) {
      try {
        params[part.slice(1)] = decodeURIComponent(value);
      } catch {
        return null;
      }
    } else if (part !== value) return null;
  }
  return params;
}

function segments(path: string): string[] {
  return path.split('/').filter((part) => part !== '');
}

/** Where a project's screen lives: `/project/<id>/<path>`. */
export function projectPath(projectId: string | number, path = ''): string {
  return `/project/${encodeURIComponent(String(projectId))}/${path}`.replace(/\/$/, '') || '/';
}

/** The project id and the screen path of a console URL, or null outside `/project/…`. */
export function splitProjectPath(path: string): { projectId: string; rest: string } | null {
  const match = /^\/project\/([^/]+)\/?(.*)$/.exec(path);
  if (!match) return null;
  const params = matchPath(':projectId', match[1]!);
  return params && { projectId: params.projectId!, rest: match[2]!.replace(/\/$/, '') };
}
