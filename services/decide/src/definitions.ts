import { createHash } from 'node:crypto';
import { sectionDefaults, sections } from '@plover/config';
import type { Logger } from '@plover/core';
import { definitionVersions, loadDefinitions, onDefinitionsChanged, type ProjectDefinitions } from '@plover/flag-store';
import { compileFlags, type CompiledFlags, type PropertyGroup } from '@plover/flags';
import type { Sql } from '@plover/postgres';
import { renderDefinitions, type RenderedDefinitions } from './responses';

/** The `decide` config section's defaults, for what a caller's settings leave out. */
export const DECIDE_DEFAULTS = sectionDefaults(sections.decide);

export interface CachedDefinitions extends ProjectDefinitions {
  /** `definitionVersions` at the time the definitions were read. */
  version: string;
  compiled: CompiledFlags;
  /** Keys of active flags with experience continuity: the hash-key override write concerns only these. */
  continuityKeys: string[];
  /** The JSON `/decide` and `/flags` answers are written from (the active flags, the config fields). */
  rendered: RenderedDefinitions;
  /** Local-evaluation bodies (docs/decide.md#routes) and their ETags, with and without `cohorts`, built on first use. */
  localEvaluation(sendCohorts: boolean): { body: string; etag: string };
}

export interface DefinitionsCacheOptions {
  /** How often every cached project's version is checked; changes from other processes show within this. */
  pollIntervalMs?: number;
  logger: Logger;
}

/**
 * Flag definitions per project in memory (docs/decide.md#definitions-cache). A change through the management API in this
 * process drops the entry at once (`onDefinitionsChanged`); other processes notice the bumped
 * `flag_definition_versions` row at their next poll. When Postgres is down the last definitions keep being
 * served.
 */
export class DefinitionsCache {
  private readonly entries = new Map<number, CachedDefinitions>();
  private readonly stale = new Set<number>();
  private readonly loads = new Map<number, Promise<CachedDefinitions>>();
  private readonly loadTokens = new Map<number, object>();
  private readonly pollIntervalMs: number;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly sql: Sql,
    options: DefinitionsCacheOptions,
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? DECIDE_DEFAULTS.definitionsPollMs;
    this.logger = options.logger;
    this.unsubscribe = onDefinitionsChanged((projectId) => this.invalidate(projectId));
    this.timer = setInterval(() => void this.poll(), this.pollIntervalMs);
    this.timer.unref();
  }

  /** Stops the poll and the change subscription; the composition root calls it on shutdown. */
  close(): void {
    this.unsubscribe();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  invalidate(projectId: number): void {
    if (this.entries.has(projectId)) this.stale.add(projectId);
    this.loads.delete(projectId);
    this.loadTokens.delete(projectId);
  }

  /** The project's definitions; rejects only when they were never loaded and cannot be now. */
  async get(projectId: number): Promise<CachedDefinitions> {
    const entry = this.entries.get(projectId);
    if (entry && !this.stale.has(projectId)) return entry;
    try {
      return await this.load(projectId);
    } catch (error) {
      if (entry) {
        this.logger.warn({ err: error, projectId }, 'flag definitions reload failed; serving the previous ones');
        return entry;
      }
      throw error;
    }
  }

  private load(projectId: number): Promise<CachedDefinitions> {
    const current = this.loads.get(projectId);
    if (current) return current;
    const token = {};
    const pending = (async () => {
      // The version first: a change committed after it is read bumps it again and is picked up by the poll.
      const versions = await definitionVersions(this.sql, [projectId]);
      const definitions = await loadDefinitions(this.sql, projectId);
      const entry = buildEntry(definitions, versions.get(projectId) ?? '');
      // An invalidation while loading dropped this load: its result may be stale, so it is not kept.
      if (this.loadTokens.get(projectId) === token) {
        this.entries.set(projectId, entry);
        this.stale.delete(projectId);
      }
      return entry;
    })().finally(() => {
      if (this.loadTokens.get(projectId) === token) {
        this.loads.delete(projectId);
        this.loadTokens.delete(projectId);
      }
    });
    this.loads.set(projectId, pending);
    this.loadTokens.set(projectId, token);
    return pending;
  }

  private async poll(): Promise<void> {
    if (this.polling || this.entries.size === 0) return;
    this.polling = true;
    try {
      const versions = await definitionVersions(this.sql, [...this.entries.keys()]);
      for (const [projectId, entry] of this.entries) {
        if ((versions.get(projectId) ?? '') !== entry.version) this.invalidate(projectId);
      }
    } catch (error) {
      this.logger.debug({ err: error }, 'flag definitions version poll failed');
    } finally {
      this.polling = false;
    }
  }
}

function buildEntry(definitions: ProjectDefinitions, version: string): CachedDefinitions {
  const compiled = compileFlags({ flags: definitions.flags, cohorts: definitions.cohorts });
  const bodies = new Map<boolean, { body: string; etag: string }>();
  return {
    ...definitions,
    version,
    compiled,
    continuityKeys: definitions.flags.filter((flag) => flag.active && flag.ensure_experience_continuity === true).map((flag) => flag.key),
    rendered: renderDefinitions(definitions),
    localEvaluation(sendCohorts) {
      let cached = bodies.get(sendCohorts);
      if (!cached) {
        const body = JSON.stringify(localEvaluationPayload(definitions, sendCohorts));
        cached = { body, etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"` };
        bodies.set(sendCohorts, cached);
      }
      return cached;
    },
  };
}

/**
 * `{flags, group_type_mapping, cohorts}` as SDKs read it for local evaluation (posthog-node, posthog-python):
 * every non-deleted flag, inactive ones included. Without `send_cohorts` cohort filters are left as they are
 * (older SDKs then fall back to the server for those flags).
 */
export function localEvaluationPayload(definitions: ProjectDefinitions, sendCohorts: boolean): Record<string, unknown> {
  const cohorts: Record<string, PropertyGroup> = {};
  if (sendCohorts) {
    for (const cohort of definitions.cohorts) {
      if (cohort.is_static === true) continue;
      const properties = cohort.filters?.properties;
      if (properties) cohorts[String(cohort.id)] = properties;
    }
  }
  return {
    flags: definitions.flags.map((flag) => ({
      id: flag.id,
      team_id: flag.team_id,
      name: flag.name ?? '',
      key: flag.key,
      filters: flag.filters,
      deleted: false,
      active: flag.active,
      ensure_experience_continuity: flag.ensure_experience_continuity ?? false,
      rollout_percentage: flag.rollout_percentage ?? null,
      version: flag.version ?? 1,
    })),
    group_type_mapping: definitions.groupTypeMapping,
    cohorts,
  };
}
