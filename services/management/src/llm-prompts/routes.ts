import { route, type Route } from '../http/route-table';
import { errors } from '../shared/errors';
import { ErrorBody } from '../shared/schema';

/**
 * `/llm_prompts/`, which @posthog/ai's prompt client reads (`name/:prompt_name/`). PostHog serves prompt management
 * only to organizations with its prompt feature turned on and answers every other one 403; Plover keeps no prompts,
 * so it answers as PostHog answers such an organization, and the client reports that the feature is not enabled.
 */
export function llmPromptRoutes(): Route[] {
  const refused = () => {
    throw errors.forbidden('You do not have permission to perform this action.');
  };
  const paths = [
    ['get', '/llm_prompts', 'llm_prompt:read', 'List prompts'],
    ['post', '/llm_prompts', 'llm_prompt:write', 'Create a prompt'],
    ['get', '/llm_prompts/name/:prompt_name', 'llm_prompt:read', 'A prompt by name (what @posthog/ai fetches)'],
  ] as const;
  return paths.map(([method, path, scope, summary]) =>
    route({
      method,
      path,
      scope,
      summary: `${summary}: always 403, as PostHog answers an organization without prompt management (Plover keeps no prompts)`,
      response: { status: 403, schema: ErrorBody },
      handler: refused,
    }),
  );
}
