/**
 * Every management API operation the console calls, in one table: method, OpenAPI path template and the scope
 * the server requires. The client (client.ts) only calls operations from here, and a test checks each one
 * against the OpenAPI document the server publishes at `/api/schema/` (same path, method and
 * `x-required-scope`), so the console cannot drift from the API. Types of bodies and answers ride along.
 */
import type {
  Cohort,
  CohortCreate,
  CorrelationRequest,
  CorrelationResult,
  Dashboard,
  DashboardBasic,
  DashboardWrite,
  EarlyAccessFeature,
  EarlyAccessFeatureCreate,
  EventRow,
  FeatureFlag,
  FeatureFlagWrite,
  GroupType,
  Insight,
  InsightWrite,
  NextPage,
  Page,
  Person,
  PersonalApiKey,
  PersonalApiKeyCreate,
  Playlist,
  PlaylistWrite,
  Project,
  ProjectPatch,
  ProjectSettings,
  QueryRequest,
  Recording,
  Sharing,
  SharingWrite,
  Survey,
  SurveyCreate,
  SurveyQuestionResults,
  SurveyResponse,
  SurveyStats,
  TrendRequest,
  TrendResponse,
  User,
} from './types';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface Operation<Response, Body = undefined, Path extends string = string> {
  method: Method;
  /** OpenAPI path template, e.g. `/api/projects/{project_id}/insights/{id}/`. */
  path: Path;
  /** The scope the server checks (`x-required-scope`), named in the screen's message when the key lacks it. */
  scope: string;
  /** Type carriers only: never set. */
  readonly response?: Response;
  readonly body?: Body;
}

function op<Response, Body = undefined>() {
  return <Path extends string>(method: Method, path: Path, scope: string): Operation<Response, Body, Path> => ({ method, path, scope });
}

const PROJECT = '/api/projects/{project_id}';

export const operations = {
  currentUser: op<User>()('GET', '/api/users/@me/', 'user:read'),
  listProjects: op<Page<Project>>()('GET', '/api/projects/', 'project:read'),
  getProject: op<ProjectSettings>()('GET', `${PROJECT}/`, 'project:read'),
  updateProject: op<ProjectSettings, ProjectPatch>()('PATCH', `${PROJECT}/`, 'project:write'),
  trend: op<TrendResponse, TrendRequest>()('POST', `${PROJECT}/insights/trend/`, 'insight:read'),
  funnelCorrelation: op<{ result: CorrelationResult }, CorrelationRequest>()('POST', `${PROJECT}/insights/funnel/correlation/`, 'insight:read'),
  /** The query API: the answer's shape is the node kind's (api/query.ts types it per kind). */
  query: op<Record<string, unknown>, QueryRequest>()('POST', `${PROJECT}/query/`, 'query:read'),
  listInsights: op<Page<Insight>>()('GET', `${PROJECT}/insights/`, 'insight:read'),
  myLastViewedInsights: op<Insight[]>()('GET', `${PROJECT}/insights/my_last_viewed/`, 'insight:read'),
  getInsight: op<Insight>()('GET', `${PROJECT}/insights/{id}/`, 'insight:read'),
  createInsight: op<Insight, InsightWrite>()('POST', `${PROJECT}/insights/`, 'insight:write'),
  updateInsight: op<Insight, InsightWrite>()('PATCH', `${PROJECT}/insights/{id}/`, 'insight:write'),
  listDashboards: op<Page<DashboardBasic>>()('GET', `${PROJECT}/dashboards/`, 'dashboard:read'),
  createDashboard: op<Dashboard, DashboardWrite>()('POST', `${PROJECT}/dashboards/`, 'dashboard:write'),
  getDashboard: op<Dashboard>()('GET', `${PROJECT}/dashboards/{id}/`, 'dashboard:read'),
  updateDashboard: op<Dashboard, DashboardWrite>()('PATCH', `${PROJECT}/dashboards/{id}/`, 'dashboard:write'),
  getDashboardSharing: op<Sharing>()('GET', `${PROJECT}/dashboards/{id}/sharing/`, 'sharing_configuration:read'),
  updateDashboardSharing: op<Sharing, SharingWrite>()('PATCH', `${PROJECT}/dashboards/{id}/sharing/`, 'sharing_configuration:write'),
  refreshDashboardSharing: op<Sharing>()('POST', `${PROJECT}/dashboards/{id}/sharing/refresh/`, 'sharing_configuration:write'),
  listEvents: op<Page<EventRow>>()('GET', `${PROJECT}/events/`, 'query:read'),
  listPersons: op<Page<Person>>()('GET', `${PROJECT}/persons/`, 'person:read'),
  getPerson: op<Person>()('GET', `${PROJECT}/persons/{id}/`, 'person:read'),
  updatePerson: op<Person, { properties: Record<string, unknown> }>()('PATCH', `${PROJECT}/persons/{id}/`, 'person:write'),
  deletePerson: op<undefined>()('DELETE', `${PROJECT}/persons/{id}/`, 'person:write'),
  listRecordings: op<NextPage<Recording>>()('GET', `${PROJECT}/session_recordings/`, 'session_recording:read'),
  listPlaylists: op<Page<Playlist>>()('GET', `${PROJECT}/session_recording_playlists/`, 'session_recording_playlist:read'),
  getPlaylist: op<Playlist>()('GET', `${PROJECT}/session_recording_playlists/{short_id}/`, 'session_recording_playlist:read'),
  createPlaylist: op<Playlist, PlaylistWrite>()('POST', `${PROJECT}/session_recording_playlists/`, 'session_recording_playlist:write'),
  updatePlaylist: op<Playlist, PlaylistWrite>()('PATCH', `${PROJECT}/session_recording_playlists/{short_id}/`, 'session_recording_playlist:write'),
  listPlaylistRecordings: op<NextPage<Recording>>()('GET', `${PROJECT}/session_recording_playlists/{short_id}/recordings/`, 'session_recording_playlist:read'),
  addPlaylistRecording: op<{ success: boolean }, Record<string, never>>()(
    'POST',
    `${PROJECT}/session_recording_playlists/{short_id}/recordings/{session_recording_id}/`,
    'session_recording_playlist:write',
  ),
  removePlaylistRecording: op<undefined>()(
    'DELETE',
    `${PROJECT}/session_recording_playlists/{short_id}/recordings/{session_recording_id}/`,
    'session_recording_playlist:write',
  ),
  listFlags: op<Page<FeatureFlag>>()('GET', `${PROJECT}/feature_flags/`, 'feature_flag:read'),
  getFlag: op<FeatureFlag>()('GET', `${PROJECT}/feature_flags/{id}/`, 'feature_flag:read'),
  createFlag: op<FeatureFlag, FeatureFlagWrite>()('POST', `${PROJECT}/feature_flags/`, 'feature_flag:write'),
  updateFlag: op<FeatureFlag, FeatureFlagWrite>()('PATCH', `${PROJECT}/feature_flags/{id}/`, 'feature_flag:write'),
  listCohorts: op<Page<Cohort>>()('GET', `${PROJECT}/cohorts/`, 'cohort:read'),
  createCohort: op<Cohort, CohortCreate>()('POST', `${PROJECT}/cohorts/`, 'cohort:write'),
  listEarlyAccessFeatures: op<Page<EarlyAccessFeature>>()('GET', `${PROJECT}/early_access_features/`, 'early_access_feature:read'),
  createEarlyAccessFeature: op<EarlyAccessFeature, EarlyAccessFeatureCreate>()('POST', `${PROJECT}/early_access_features/`, 'early_access_feature:write'),
  listSurveys: op<Page<Survey>>()('GET', `${PROJECT}/surveys/`, 'survey:read'),
  createSurvey: op<Survey, SurveyCreate>()('POST', `${PROJECT}/surveys/`, 'survey:write'),
  getSurvey: op<Survey>()('GET', `${PROJECT}/surveys/{id}/`, 'survey:read'),
  surveyStats: op<SurveyStats>()('GET', `${PROJECT}/surveys/{id}/stats/`, 'survey:read'),
  surveyQuestions: op<SurveyQuestionResults>()('GET', `${PROJECT}/surveys/{id}/questions/`, 'survey:read'),
  surveyResponses: op<Page<SurveyResponse>>()('GET', `${PROJECT}/surveys/{id}/responses/`, 'survey:read'),
  listGroupTypes: op<GroupType[]>()('GET', `${PROJECT}/groups_types/`, 'group:read'),
  listPersonalKeys: op<PersonalApiKey[]>()('GET', '/api/personal_api_keys/', 'personal_api_key:read'),
  createPersonalKey: op<PersonalApiKey, PersonalApiKeyCreate>()('POST', '/api/personal_api_keys/', 'personal_api_key:write'),
  deletePersonalKey: op<undefined>()('DELETE', '/api/personal_api_keys/{id}/', 'personal_api_key:write'),
} as const;

/** `{project_id}` and the like in a path template, as the names of an object type. */
export type PathParams<Path extends string> = Path extends `${string}{${infer Name}}${infer Rest}`
  ? { [K in Name]: string | number } & PathParams<Rest>
  : unknown;

/** The path of `template` with its `{name}` parts filled in (each URI-encoded). */
export function fillPath(template: string, params: Record<string, string | number>): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`missing path parameter ${name}`);
    return encodeURIComponent(String(value));
  });
}
