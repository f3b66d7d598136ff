/** The actions an engine test's InsightContext knows: none, or a fixed list (as a project's store would answer). */
import { ApiError } from '@plover/core';
import type { ActionDefinition } from '../../src/types';
import type { InsightContext } from '../../src/types';

/** An action lookup over `actions` (by id, or by name given a string); any other is the 400 an unknown action gives. */
export function actionsOf(actions: readonly ActionDefinition[]): InsightContext['action'] {
  return (ref, attr) => {
    const action = actions.find((candidate) => (typeof ref === 'number' ? candidate.id === ref : candidate.name === ref));
    return action ? Promise.resolve(action) : Promise.reject(ApiError.validation(`Action ${ref} does not exist.`, attr, 'invalid_input'));
  };
}

/** The lookup of a project without actions. */
export const noActions = actionsOf([]);
