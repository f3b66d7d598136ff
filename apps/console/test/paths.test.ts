import { matchPath, projectPath, splitProjectPath } from '../src/paths';

describe('console paths', () => {
  it('matches route patterns segment by segment, decoding parameters', () => {
    expect(matchPath('', '')).toEqual({});
    expect(matchPath('insights', 'insights')).toEqual({});
    expect(matchPath('insights/:shortId', 'insights/a%20b')).toEqual({ shortId: 'a b' });
    expect(matchPath('insights/:shortId', 'insights')).toBeNull();
    expect(matchPath('insights/new', 'insights/abc')).toBeNull();
    expect(matchPath(':id', '%E0%A4%A')).toBeNull();
  });

  it('splits /project/<id>/<screen path> and builds it back', () => {
    expect(splitProjectPath('/project/12/insights/abc/')).toEqual({ projectId: '12', rest: 'insights/abc' });
    expect(splitProjectPath('/project/%40current')).toEqual({ projectId: '@current', rest: '' });
    expect(splitProjectPath('/insights')).toBeNull();
    expect(projectPath(12)).toBe('/project/12');
    expect(projectPath('@current', 'insights/new')).toBe('/project/%40current/insights/new');
  });
});
