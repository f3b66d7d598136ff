/**
 * The survey results screen end to end: embedded Plover, survey events sent through capture as posthog-js sends
 * them, and Debian's Chromium reading the counts, rates and each question's answers from the screen.
 */
import type { Page } from 'playwright-core';
import { describeWithBrowser } from '../../../test/support/browser';
import { startEmbedded } from '../../../test/support/embedded';
import { ConsoleTarget, screenshot, signIn, usePage, type CapturedEvent } from './support/console';

const target = {} as { console: ConsoleTarget; projectId: number; surveyId: string };

const QUESTIONS = [
  { id: 'why', type: 'open', question: 'What almost stopped you?' },
  { id: 'score', type: 'rating', question: 'How easy was it?', scale: 5 },
  { id: 'role', type: 'single_choice', question: 'Your role?', choices: ['Engineer', 'Designer', 'Founder'] },
];

/** Five people see the survey; three answer (one question by question), one dismisses, one only looks. */
function dataset(survey: string, now: number): CapturedEvent[] {
  const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
  const shown = (who: string, ago: number): CapturedEvent => ({
    event: 'survey shown',
    distinct_id: who,
    timestamp: at(ago),
    properties: { $survey_id: survey },
  });
  const sent = (who: string, ago: number, answers: Record<string, unknown>, submission: string): CapturedEvent => ({
    event: 'survey sent',
    distinct_id: who,
    timestamp: at(ago),
    properties: { $survey_id: survey, $survey_submission_id: submission, ...answers },
  });
  return [
    ...['ann', 'ben', 'cat', 'dan', 'eve'].map((who, i) => shown(who, 30 - i)),
    sent('ann', 20, { $survey_response_why: 'The price page', $survey_response_score: 4, $survey_response_role: 'Engineer' }, 'a'),
    sent('ben', 19, { $survey_response_score: 5 }, 'b'),
    sent('ben', 18, { $survey_response_why: 'Nothing', $survey_response_role: 'Founder' }, 'b'),
    sent('cat', 17, { $survey_response_score: 4, $survey_response_role: 'Student' }, 'c'),
    { event: 'survey dismissed', distinct_id: 'dan', timestamp: at(16), properties: { $survey_id: survey } },
  ];
}

beforeAll(async () => {
  target.console = new ConsoleTarget(await startEmbedded());
  target.projectId = target.console.plover.credentials.projectId;
  const now = Date.now();
  const created = await target.console.api<{ id: string }>('POST', `/api/projects/${target.projectId}/surveys/`, {
    name: 'Checkout feedback',
    questions: QUESTIONS,
    start_date: new Date(now - 3_600_000).toISOString(),
  });
  target.surveyId = created.id;
  const events = dataset(created.id, now);
  await target.console.capture(events);
  await target.console.waitForEvents(events.length);
}, 180_000);

afterAll(async () => {
  await target.console?.plover.stop();
});

describeWithBrowser()('the survey results screen in Chromium', () => {
  const session = usePage();
  let page: Page;

  it('shows the counts, the rates and each question from the surveys list', async () => {
    ({ page } = session);
    await signIn(page, target.console.base, target.console.plover.credentials.personalKey);
    await page.waitForURL(`**/project/${target.projectId}`);
    await page.goto(`${target.console.base}/project/${target.projectId}/feature_flags/surveys`);
    await page.getByRole('link', { name: 'Checkout feedback' }).click();
    await page.waitForURL(`**/feature_flags/surveys/${target.surveyId}`);

    const figure = (name: string) => page.getByRole('region', { name, exact: true });
    await figure('Shown').getByText('5', { exact: true }).waitFor();
    await expect(figure('Shown').textContent()).resolves.toContain('5 people · 1 only saw it');
    // Ben's two events are one submission: 3 responses of 5 views.
    await expect(figure('Responses').textContent()).resolves.toMatch(/3\s*60% of views · 60% of people/);
    await expect(figure('Dismissed').textContent()).resolves.toMatch(/1\s*20% of views/);

    const open = page.getByRole('region', { name: '1. What almost stopped you?', exact: true });
    await open.getByRole('listitem').first().waitFor();
    await expect(open.getByRole('listitem').allTextContents()).resolves.toEqual([
      expect.stringContaining('Nothing'),
      expect.stringContaining('The price page'),
    ]);
    const rating = page.getByRole('region', { name: '2. How easy was it?', exact: true });
    await expect(rating.textContent()).resolves.toContain('3 of 3 responses answered · average 4.33');
    await expect(rating.getByRole('row', { name: /^4\s*2/ }).count()).resolves.toBe(1);
    await expect(rating.getByRole('row').count()).resolves.toBe(6);
    const role = page.getByRole('region', { name: '3. Your role?', exact: true });
    await expect(role.getByRole('row', { name: /^<other>\s*1/ }).count()).resolves.toBe(1);
    await expect(role.getByRole('row', { name: /^Designer\s*0/ }).count()).resolves.toBe(1);
    await screenshot(page, 'survey-results');
    expect(session.problems).toEqual([]);
  }, 240_000);
});
