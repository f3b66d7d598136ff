/** A generated world ingested for real, with the engine's and the reference's view of its project. */
import { ApiError } from '@plover/core';
import type { InsightContext } from '../../src/types';
import { noActions } from './context';
import { COHORT_ID, type World } from './generate';
import type { Ingestion } from './ingest';
import type { PlainEvent, ReferenceContext } from './reference';

export interface Project {
  events: PlainEvent[];
  ctx: InsightContext;
  reference: ReferenceContext;
}

export async function ingestWorld(ingestion: Ingestion, world: World): Promise<Project> {
  const { projectId, events } = await ingestion.ingest(world.dataset);
  const persons = [...new Set(events.map((event) => event.person))].sort();
  const cohorts = new Map([[COHORT_ID, persons.filter((_, i) => world.cohortPicks.some((pick) => pick % persons.length === i))]]);
  const cohortMembers = (id: number) => {
    const members = cohorts.get(id);
    return members ? Promise.resolve(members) : Promise.reject(ApiError.validation(`no cohort ${id}`, 'properties'));
  };
  return {
    events,
    ctx: { projectId, timezone: world.timezone, now: world.now, cohortMembers, action: noActions },
    reference: { timezone: world.timezone, now: world.now, cohorts },
  };
}
