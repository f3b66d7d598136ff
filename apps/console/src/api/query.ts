/** Calls to the query API (`query/`), typed by the kind of node sent. */
import type { ApiClient } from './client';
import { operations } from './operations';
import type { HogQLMetadataResponse, HogQLResponse, QueryNode } from './types';

/** Runs `query` for the project; the caller names the answer's type, which the node's kind decides. */
export async function runQuery<Response>(client: ApiClient, projectId: string, query: QueryNode, signal?: AbortSignal): Promise<Response> {
  return (await client.call(operations.query, { project_id: projectId }, { body: { query }, signal })) as Response;
}

/** Runs a HogQL SELECT; `values` fill its `{placeholders}`, bound by the server (never pasted into the text). */
export function runHogQL(client: ApiClient, projectId: string, query: string, signal?: AbortSignal, values?: Record<string, unknown>): Promise<HogQLResponse> {
  return runQuery<HogQLResponse>(client, projectId, { kind: 'HogQLQuery', query, ...(values ? { values } : {}) }, signal);
}

/** Whether `query` is valid HogQL, with each problem's position, without running it. */
export function checkHogQL(client: ApiClient, projectId: string, query: string, signal?: AbortSignal): Promise<HogQLMetadataResponse> {
  return runQuery<HogQLMetadataResponse>(client, projectId, { kind: 'HogQLMetadata', language: 'hogQL', query }, signal);
}
