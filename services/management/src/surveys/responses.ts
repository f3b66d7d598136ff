import type { ClickHouse, ClickHouseParams } from '@plover/clickhouse';
import type { Page } from '../http/render';
import { isoZ, SENT, SUBMISSION_KEY, timeConditions, type SurveyScope } from './results';

/** A survey question as the survey stores it (posthog-js's shape); only these fields are read. */
export interface SurveyQuestion {
  id?: unknown;
  type?: unknown;
  question?: unknown;
  choices?: unknown;
  scale?: unknown;
}

/** One submission: its latest `survey sent` event and, per question, its latest non-empty answer. */
export interface SurveyResponse {
  uuid: string;
  submission_id: string | null;
  timestamp: string;
  distinct_id: string;
  person_id: string;
  /** Answers by question id (or `index_<n>` for a question without one); unanswered questions are null. */
  answers: Record<string, unknown>;
}

/** Per-question results take at most this many submissions, the newest. */
export const QUESTION_RESULTS_MAX_SUBMISSIONS = 100_000;
/** Open-text answers listed per question, newest first. */
export const OPEN_ANSWERS_LISTED = 200;

export const questionKey = (question: SurveyQuestion, index: number): string =>
  typeof question.id === 'string' && question.id !== '' ? question.id : `index_${index}`;

/**
 * The answer to question `index`: posthog-js's `$survey_response_<question id>`, else the older index key
 * (`$survey_response` for the first question, `$survey_response_<index>` after it); raw JSON text, '' when absent.
 */
function answerExpr(question: SurveyQuestion, index: number, params: ClickHouseParams): string {
  params[`idKey${index}`] = typeof question.id === 'string' ? `$survey_response_${question.id}` : '';
  params[`indexKey${index}`] = index === 0 ? '$survey_response' : `$survey_response_${index}`;
  return `if(JSONHas(properties, {idKey${index}:String}), JSONExtractRaw(properties, {idKey${index}:String}), JSONExtractRaw(properties, {indexKey${index}:String}))`;
}

/**
 * Submissions of one survey (scope.surveyIds[0]) in the scope's window, newest first: grouped by submission, the
 * latest event's uuid, time and ids, each question's latest non-empty answer; a submission whose latest event is
 * excluded (archived) is left out.
 */
function submissionsSql(scope: SurveyScope, questions: readonly SurveyQuestion[], params: ClickHouseParams): string {
  params.projectId = scope.projectId;
  params.surveyId = scope.surveyIds[0]!;
  params.excluded = [...scope.excluded];
  const answers = questions.map((q, i) => `${answerExpr(q, i, params)} AS a${i}`);
  // An absent, null, blank or empty-list answer is no answer.
  params.blank = '^(|null|"\\s*"|\\[\\s*\\])$';
  const merged = questions.map((_, i) => `argMaxIf(a${i}, timestamp, NOT match(a${i}, {blank:String})) AS q${i}`);
  return `SELECT ${SUBMISSION_KEY} AS submission, argMax(uuid, timestamp) AS response_uuid, toString(max(timestamp)) AS at,
      argMax(distinct_id, timestamp) AS distinct, toString(argMax(person_id, timestamp)) AS person,
      if(JSONExtractString(argMax(properties, timestamp), '$survey_submission_id') = '', '', submission) AS submission_id${merged.map((m) => `, ${m}`).join('')}
    FROM (SELECT uuid, timestamp, distinct_id, person_id, properties${answers.map((a) => `, ${a}`).join('')}
          FROM events FINAL
          WHERE team_id = {projectId:Int64} AND event = '${SENT}'
            AND JSONExtractString(properties, '$survey_id') = {surveyId:String}${timeConditions(scope, params)})
    GROUP BY submission
    HAVING response_uuid NOT IN {excluded:Array(UUID)}`;
}

type SubmissionRow = { response_uuid: string; at: string; distinct: string; person: string; submission_id: string } & Record<string, string>;

const parseAnswer = (raw: string | undefined): unknown => {
  if (raw === undefined || raw === '') return null;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
};

function responseOf(row: SubmissionRow, questions: readonly SurveyQuestion[]): SurveyResponse {
  return {
    uuid: row.response_uuid,
    submission_id: row.submission_id === '' ? null : row.submission_id,
    timestamp: isoZ(row.at)!,
    distinct_id: row.distinct,
    person_id: row.person,
    answers: Object.fromEntries(questions.map((q, i) => [questionKey(q, i), parseAnswer(row[`q${i}`])])),
  };
}

/** One page of a survey's submissions, newest first, and how many there are. */
export async function surveyResponses(
  clickhouse: ClickHouse,
  scope: SurveyScope,
  questions: readonly SurveyQuestion[],
  page: Page,
): Promise<{ results: SurveyResponse[]; count: number }> {
  const params: ClickHouseParams = { limit: page.limit, offset: page.offset };
  const sql = submissionsSql(scope, questions, params);
  const [rows, counted] = await Promise.all([
    clickhouse.query<SubmissionRow>(
      'management.surveyResponses',
      `${sql} ORDER BY max(timestamp) DESC, response_uuid LIMIT {limit:UInt32} OFFSET {offset:UInt32}`,
      params,
    ),
    clickhouse.query<{ n: string }>('management.surveyResponseTotal', `SELECT count() AS n FROM (${sql})`, params),
  ]);
  return { results: rows.map((row) => responseOf(row, questions)), count: Number(counted[0]?.n ?? 0) };
}

export interface QuestionResult {
  id: string;
  index: number;
  question: string;
  type: string;
  /** Submissions that answered it. */
  response_count: number;
  /** Rating, single and multiple choice: answers → submissions (choices and the rating scale listed even at 0). */
  distribution?: Record<string, number>;
  /** Rating: mean of the numeric answers. */
  average?: number | null;
  /** Open text: the newest answers. */
  answers?: Array<{ value: string; timestamp: string; distinct_id: string }>;
}

/** Choice answers outside the configured choices (an "Other" text) are counted under this key. */
export const OTHER_ANSWER = '<other>';

function ratingScale(question: SurveyQuestion): string[] {
  const scale = typeof question.scale === 'number' ? question.scale : 5;
  const first = scale === 10 ? 0 : 1;
  return Array.from({ length: scale - first + 1 }, (_, i) => String(first + i));
}

const textOf = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));
const answered = (value: unknown): boolean =>
  value !== null && value !== undefined && !(typeof value === 'string' && value.trim() === '') && !(Array.isArray(value) && value.length === 0);

/** Each question's results over the survey's newest submissions (at most QUESTION_RESULTS_MAX_SUBMISSIONS). */
export async function questionResults(
  clickhouse: ClickHouse,
  scope: SurveyScope,
  questions: readonly SurveyQuestion[],
): Promise<{ submissions: number; questions: QuestionResult[] }> {
  const page = { limit: QUESTION_RESULTS_MAX_SUBMISSIONS, offset: 0 };
  const { results, count } = await surveyResponses(clickhouse, scope, questions, page);
  const out = questions.map((question, index): QuestionResult => {
    const key = questionKey(question, index);
    const type = typeof question.type === 'string' ? question.type : 'open';
    const given = results.filter((r) => answered(r.answers[key]));
    const base = { id: key, index, question: typeof question.question === 'string' ? question.question : '', type, response_count: given.length };
    if (type === 'rating') {
      const distribution = Object.fromEntries(ratingScale(question).map((v) => [v, 0]));
      const numbers: number[] = [];
      for (const r of given) {
        const text = textOf(r.answers[key]);
        distribution[text] = (distribution[text] ?? 0) + 1;
        if (text.trim() !== '' && Number.isFinite(Number(text))) numbers.push(Number(text));
      }
      return { ...base, distribution, average: numbers.length ? numbers.reduce((a, b) => a + b, 0) / numbers.length : null };
    }
    if (type === 'single_choice' || type === 'multiple_choice') {
      const choices = Array.isArray(question.choices) ? question.choices.filter((c): c is string => typeof c === 'string') : [];
      const distribution: Record<string, number> = Object.fromEntries(choices.map((c) => [c, 0]));
      for (const r of given) {
        const value = r.answers[key];
        for (const picked of new Set(Array.isArray(value) ? value.map(textOf) : [textOf(value)])) {
          const bucket = choices.includes(picked) ? picked : OTHER_ANSWER;
          distribution[bucket] = (distribution[bucket] ?? 0) + 1;
        }
      }
      return { ...base, distribution };
    }
    if (type === 'open') {
      return {
        ...base,
        answers: given.slice(0, OPEN_ANSWERS_LISTED).map((r) => ({ value: textOf(r.answers[key]), timestamp: r.timestamp, distinct_id: r.distinct_id })),
      };
    }
    return base;
  });
  return { submissions: count, questions: out };
}
