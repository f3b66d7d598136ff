import type { Request } from 'express';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found } from '../http/resource-routes';
import { route, type Route } from '../http/route-table';
import { errors } from '../shared/errors';
import { UUID_TEXT } from '../shared/definitions-store';
import { bound, parseRange, ratesOf, responseCounts, surveyStats, type SurveyScope } from './results';
import { questionResults, surveyResponses, type SurveyQuestion } from './responses';
import {
  ResponseArchived,
  ResponsesCount,
  ResponsesCountQuery,
  SurveyQuestionResults,
  SurveyResponse,
  SurveyResultsQuery,
  SurveyStatsQuery,
  SurveyStatsResult,
  SurveysStatsResult,
} from './schemas';
import { SurveysStore } from './surveys-store';

const SURVEY = '/surveys/:id';

/**
 * Survey results from the events posthog-js sends (`survey shown`, `survey dismissed`, `survey sent`): one
 * survey's and all surveys' counts and rates, submissions per survey, a survey's responses and per-question
 * results, and archiving single responses
 * (docs/management.md#survey-results). Declared before `/surveys/:id` so that `stats` is not read as an id.
 */
export function surveyResultRoutes({ sql, clickhouse }: Pick<ManagementDeps, 'sql' | 'clickhouse'>): Route[] {
  const store = new SurveysStore(sql);

  /** One survey and what its results read: the requested window within its start and end, archived responses left out on request. */
  async function surveyScope(req: Request, query: { date_from?: string; date_to?: string; exclude_archived?: boolean }) {
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
    return { survey, start, scope, questions: survey.questions as SurveyQuestion[] };
  }

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
        const { survey, start, scope } = await surveyScope(req, query);
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
    route({
      method: 'get',
      path: `${SURVEY}/responses`,
      scope: 'survey:read',
      summary: "The survey's submissions, newest first: each question's latest answer in the submission (`format=csv` for a CSV)",
      query: SurveyResultsQuery,
      paginated: 'envelope',
      csv: { file: 'survey-responses' },
      response: { status: 200, schema: SurveyResponse },
      async handler(req, { query, page }) {
        const { scope, questions } = await surveyScope(req, query);
        const { results, count } = await surveyResponses(clickhouse, scope, questions, page);
        return { results, count, hasMore: page.offset + results.length < count };
      },
    }),
    route({
      method: 'get',
      path: `${SURVEY}/questions`,
      scope: 'survey:read',
      summary: 'Per-question results: rating distribution and average, choice counts, the newest open-text answers',
      query: SurveyResultsQuery,
      response: { status: 200, schema: SurveyQuestionResults },
      async handler(req, { query }) {
        const { survey, scope, questions } = await surveyScope(req, query);
        return { survey_id: survey.id, ...(await questionResults(clickhouse, scope, questions)) };
      },
    }),
    archiveRoute(true),
    archiveRoute(false),
  ];
}
