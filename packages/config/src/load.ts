import Ajv, { type ErrorObject } from 'ajv';

/** JSON Schema of one environment variable, as ajv reads it (values arrive as strings and are coerced). */
export type VariableSchema = Record<string, unknown> & { description: string };

/**
 * One slice of configuration: the variables it reads and how they become a typed value.
 * Services compose the sections they need, so each declares exactly the variables it uses.
 */
export interface Section<T> {
  variables: Record<string, VariableSchema>;
  required?: readonly string[];
  read(values: Record<string, unknown>): T;
}

export type Sections = Record<string, Section<unknown>>;
export type ConfigOf<S extends Sections> = { [K in keyof S]: S[K] extends Section<infer T> ? T : never };

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`Invalid configuration: ${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

function describeError(error: ErrorObject, env: Record<string, string | undefined>): ConfigError {
  if (error.keyword === 'required') {
    const variable = String((error.params as { missingProperty: string }).missingProperty);
    return new ConfigError(variable, 'is required but not set');
  }
  const variable = error.instancePath.replace(/^\//, '').split('/')[0] ?? '';
  const got = env[variable];
  return new ConfigError(variable, `${error.message ?? 'is invalid'} (got ${JSON.stringify(got)})`);
}

/**
 * Validates the environment against the union of the sections' variables and returns one typed object.
 * An empty string counts as unset, so `FOO=` in an env file falls back to the default.
 * Throws ConfigError naming the first offending variable.
 */
export function loadConfig<S extends Sections>(env: Record<string, string | undefined>, sections: S): ConfigOf<S> {
  const properties: Record<string, VariableSchema> = {};
  const required = new Set<string>();
  for (const section of Object.values(sections)) {
    Object.assign(properties, section.variables);
    for (const name of section.required ?? []) required.add(name);
  }
  const values: Record<string, unknown> = {};
  for (const name of Object.keys(properties)) {
    const value = env[name];
    if (value !== undefined && value !== '') values[name] = value;
  }
  const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: false, strict: true });
  const validate = ajv.compile({ type: 'object', properties, required: [...required] });
  if (!validate(values)) throw describeError(validate.errors![0]!, env);

  const config: Record<string, unknown> = {};
  for (const [key, section] of Object.entries(sections)) config[key] = section.read(values);
  return config as ConfigOf<S>;
}

/** Every variable any of the given sections reads, for docs and `.env.example` checks. */
export function variablesOf(sections: Sections): Record<string, VariableSchema> {
  const all: Record<string, VariableSchema> = {};
  for (const section of Object.values(sections)) Object.assign(all, section.variables);
  return all;
}

/** Composition roots call this: a bad setting stops the process with one clear line and exit code 1. */
export function loadConfigOrExit<S extends Sections>(env: Record<string, string | undefined>, sections: S): ConfigOf<S> {
  try {
    return loadConfig(env, sections);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}

/**
 * A section's value with every variable at its schema default: what a service falls back to for what its caller
 * did not set (tests, benches). The schema is the one place a default is written.
 */
export function sectionDefaults<T>(section: Section<T>): T {
  return loadConfig({}, { section }).section;
}
