/**
 * A survey's results: how often it was shown, dismissed and answered (with the rates over shown), each question's
 * answers (a bar per rating or choice, the newest open-text answers), and the responses as a CSV.
 */
import { operations } from '../api/operations';
import type { Survey, SurveyQuestionResults, SurveyStats } from '../api/types';
import { Async } from '../components/async';
import { PageHeader } from '../components/page-header';
import { Panel } from '../components/panel';
import { Problem } from '../components/problem';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { useDownload } from '../download';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import type { ScreenProps } from '../screen-props';

type Question = SurveyQuestionResults['questions'][number];

export function SurveyResultsScreen({ params }: ScreenProps) {
  const { client, projectId } = useConsole();
  const ids = { project_id: projectId, id: params.id! };
  const survey = useLoad((signal) => client.call(operations.getSurvey, ids, { signal }), [client, projectId, params.id]);
  const stats = useLoad((signal) => client.call(operations.surveyStats, ids, { signal }), [client, projectId, params.id]);
  const questions = useLoad((signal) => client.call(operations.surveyQuestions, ids, { signal }), [client, projectId, params.id]);
  const [download, downloadError] = useDownload();
  return (
    <Async value={survey}>
      {(data: Survey) => (
        <>
          <PageHeader title={data.name} subtitle={<>Survey results · {data.type}</>}>
            <button type="button" onClick={() => download(() => client.csv(operations.surveyResponses, ids, { query: { limit: 1000 } }))}>
              Download responses (CSV)
            </button>
          </PageHeader>
          {downloadError !== undefined && <Problem error={downloadError} />}
          <Async value={stats} onRetry={stats.reload}>
            {(result) => <Counts stats={result} />}
          </Async>
          <Async value={questions} onRetry={questions.reload}>
            {(result) => (
              <div class="grid">
                {result.questions.map((question) => (
                  <QuestionPanel key={question.id} question={question} submissions={result.submissions} />
                ))}
              </div>
            )}
          </Async>
        </>
      )}
    </Async>
  );
}

function Counts({ stats }: { stats: SurveyStats }) {
  const shown = stats.stats['survey shown'];
  const sent = stats.stats['survey sent'];
  const dismissed = stats.stats['survey dismissed'];
  const figure = (id: string, title: string, value: number, detail: string) => (
    <Panel id={id} title={title}>
      <p class="big-number">{value.toLocaleString()}</p>
      <p class="muted">{detail}</p>
    </Panel>
  );
  return (
    <div class="grid">
      {figure(
        'survey-shown',
        'Shown',
        shown.total_count,
        `${shown.unique_persons.toLocaleString()} people · ${shown.unique_persons_only_seen.toLocaleString()} only saw it`,
      )}
      {figure('survey-sent', 'Responses', sent.total_count, `${stats.rates.response_rate}% of views · ${stats.rates.unique_users_response_rate}% of people`)}
      {figure(
        'survey-dismissed',
        'Dismissed',
        dismissed.total_count,
        `${stats.rates.dismissal_rate}% of views · ${stats.rates.unique_users_dismissal_rate}% of people`,
      )}
      {figure('survey-respondents', 'Respondents', sent.unique_persons, sent.last_seen ? `latest response ${dateTime(sent.last_seen)}` : 'no response yet')}
    </div>
  );
}

function QuestionPanel({ question, submissions }: { question: Question; submissions: number }) {
  const id = `question-${question.index}`;
  const title = `${question.index + 1}. ${question.question || '(no text)'}`;
  const answered = `${question.response_count.toLocaleString()} of ${submissions.toLocaleString()} responses answered`;
  if (question.answers) {
    return (
      <Panel id={id} title={title} wide>
        <p class="muted">{answered}</p>
        {question.answers.length === 0 ? (
          <p class="muted">No answers yet.</p>
        ) : (
          <ul class="plain-list survey-answers">
            {question.answers.map((answer) => (
              <li key={`${answer.timestamp}-${answer.distinct_id}`}>
                <q>{answer.value}</q>{' '}
                <span class="muted">
                  — {answer.distinct_id}, {dateTime(answer.timestamp)}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Panel>
    );
  }
  const rows = Object.entries(question.distribution ?? {}).map(([answer, count]) => ({ answer, count }));
  const most = Math.max(1, ...rows.map((row) => row.count));
  return (
    <Panel id={id} title={title} wide>
      <p class="muted">
        {answered}
        {question.average != null && ` · average ${question.average.toFixed(2)}`}
      </p>
      {rows.length > 0 && (
        <DataTable
          caption={`Answers to ${title}`}
          rows={rows}
          rowKey={(row) => row.answer}
          columns={[
            { label: 'Answer', cell: (row) => row.answer },
            { label: 'Responses', numeric: true, cell: (row) => row.count.toLocaleString() },
            {
              label: 'Share',
              cell: (row) => <span class="answer-bar" style={{ width: `${(row.count / most) * 100}%` }} title={`${row.count} responses`} aria-hidden="true" />,
            },
          ]}
        />
      )}
    </Panel>
  );
}
