/** The actions an engine test's InsightContext knows: none, or a fixed list (as a project's store would answer). */
import { ApiError } from '@plover/core';
import type { ActionDefinition } from '../../src/actions';
import type { InsightContext } from '../../src/types';

/** An action lookup over `actions`; any other id is the 400 an unknown action gives. */
export function actionsOf(actions: readonly ActionDefinition[]): InsightContext['action'] {
  return (id, attr) => {
    const action = actions.find((candidate) => candidate.id === id);
    return action ? Promise.resolve(action) : Promise.reject(ApiError.validation(`Action ${id} does not exist.`, attr, 'invalid_input'));
  };
}

/** The lookup of a project without actions. */
export const noActions = actionsOf([]);
