import { traceTree, type TraceRow } from '../src/llm/llm-queries';
import { logsQuery } from '../src/logs/logs-query';

const row = (uuid: string, event: string, spanId: string | null, parentId: string | null): TraceRow => [
  uuid,
  event,
  '',
  spanId,
  parentId,
  uuid,
  null,
  0,
  0,
  0,
  0,
];

describe('logsQuery', () => {
  it('binds every typed value and takes % and _ in the text literally', () => {
    const { query, values } = logsQuery({ text: " 50%_off' OR 1=1 ", level: 'warn', session: 's1', person: '', hours: 24 });
    expect(query).toBe(
      'SELECT timestamp, level, body, service_name, session_id, distinct_id FROM logs WHERE timestamp > now() - toIntervalHour({hours}) AND body ILIKE {text} AND level = {level} AND session_id = {session} ORDER BY timestamp DESC LIMIT 200',
    );
    expect(values).toEqual({ hours: 24, text: "%50\\%\\_off' OR 1=1%", level: 'warn', session: 's1' });
  });
});

describe('traceTree', () => {
  it('puts each event under the one its parent id names, the trace event at the root, orphans at the root too', () => {
    const tree = traceTree('t', [
      row('a', '$ai_trace', 't', null),
      row('b', '$ai_span', 's1', 't'),
      row('c', '$ai_generation', 'g1', 's1'),
      row('d', '$ai_generation', null, 'gone'),
      row('e', '$ai_generation', 'g2', 't'),
    ]);
    expect(tree.map(({ row: [uuid], depth }) => [uuid, depth])).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 2],
      ['e', 1],
      ['d', 0],
    ]);
  });

  it('lists an event that names itself as parent once, at the root', () => {
    expect(traceTree('t', [row('a', '$ai_span', 's', 's')]).map(({ depth }) => depth)).toEqual([0]);
  });
});
