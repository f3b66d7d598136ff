import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found } from '../http/resource-routes';
import { route, type Route } from '../http/route-table';
import { errors } from '../shared/errors';
import { UUID_TEXT } from '../shared/definitions-store';
import { bound, parseRange, ratesOf, responseCounts, surveyStats, type SurveyScope } from './results';
import { ResponseArchived, ResponsesCount, ResponsesCountQuery, SurveyStatsQuery, SurveyStatsResult, SurveysStatsResult } from './schemas';
import { SurveysStore } from './surveys-store';

const SURVEY = '/surveys/:id';

/**
 * Survey results from the events posthog-js sends (`survey shown`, `survey dismissed`, `survey sent`): one
 * survey's and all surveys' counts and rates, submissions per survey, and archiving single responses
 * (docs/management.md#survey-results). Declared before `/surveys/:id` so that `stats` is not read as an id.
 */
export function surveyResultRoutes({ sql, clickhouse }: Pick<ManagementDeps, 'sql' | 'clickhouse'>): Route[] {
  const store = new SurveysStore(sql);

  const archiveRoute = (archived: boolean) =>
    route({
      method: 'post',
      path: `${SURVEY}/responses/:uuid/${archived ? 'archive' : 'unarchive'}`,
      scope: 'survey:write',
      summary: archived
        ? 'Archive one response (the uuid of its `survey sent` event): results with `exclude_archived=true` leave it out'
        : 'Undo archiving a response',
      response: { status: 200, schema: ResponseArchived },
      async handler(req) {
        const survey = found(await store.survey(callerOf(req).projectId, String(req.params.id)));
        const uuid = String(req.params.uuid).toLowerCase();
        if (!UUID_TEXT.test(uuid)) throw errors.validation('Must be a valid UUID.', 'uuid', 'invalid');
        await store.setResponseArchived(survey.id, uuid, archived);
        return { response_uuid: uuid, archived };
      },
    });

  return [
    route({
      method: 'get',
      path: '/surveys/stats',
      scope: 'survey:read',
      summary: "Shown, dismissed and sent counts and rates of all the project's unarchived surveys together",
      query: SurveyStatsQuery,
      response: { status: 200, schema: SurveysStatsResult },
      async handler(req, { query }) {
        const { projectId } = callerOf(req);
        const { from, to } = parseRange(query.date_from, query.date_to);
        const surveys = await store.surveyWindows(projectId, true);
        if (surveys.length === 0) return { stats: {}, rates: ratesOf(null) };
        const stats = await surveyStats(clickhouse, { projectId, surveyIds: surveys.map((s) => s.id), from, to, excluded: [] });
        return { stats, rates: ratesOf(stats) };
      },
    }),
    route({
      method: 'get',
      path: '/surveys/responses_count',
      scope: 'survey:read',
      summary: 'Submissions (a submission counted once however many partial events it sent) per survey',
      query: ResponsesCountQuery,
      response: { status: 200, schema: ResponsesCount },
      async handler(req, { query }) {
        const { projectId } = callerOf(req);
        const wanted = query.survey_ids?.split(',').map((id) => id.trim().toLowerCase());
        const surveys = (await store.surveyWindows(projectId, false)).filter((s) => !wanted || wanted.includes(s.id));
        if (surveys.length === 0) return {};
        const surveyIds = surveys.map((s) => s.id);
        const from = surveys.reduce<Date | null>((earliest, s) => bound(earliest, s.start, false), null);
        const excluded = query.exclude_archived ? await store.archivedResponses(surveyIds) : [];
        return responseCounts(clickhouse, { projectId, surveyIds, from, to: null, excluded });
      },
    }),
    route({
      method: 'get',
      path: `${SURVEY}/stats`,
      scope: 'survey:read',
      summary: "One survey's shown, dismissed and sent counts and rates, within its start and end dates",
      query: SurveyStatsQuery,
      response: { status: 200, schema: SurveyStatsResult },
      async handler(req, { query }) {
        const { projectId } = callerOf(req);
        const survey = found(await store.survey(projectId, String(req.params.id)));
        const range = parseRange(query.date_from, query.date_to);
        const start = survey.start_date ?? survey.created_at;
        const scope: SurveyScope = {
          projectId,
          surveyIds: [survey.id],
          from: bound(range.from, start, true),
          to: bound(range.to, survey.end_date, false),
          excluded: query.exclude_archived ? await store.archivedResponses([survey.id]) : [],
        };
        const stats = await surveyStats(clickhouse, scope);
        return {
          survey_id: survey.id,
          start_date: start.toISOString(),
          end_date: survey.end_date?.toISOString() ?? null,
          stats,
          rates: ratesOf(stats),
        };
      },
    }),
    archiveRoute(true),
    archiveRoute(false),
  ];
}
