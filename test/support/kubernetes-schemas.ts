/**
 * Checks Kubernetes objects against the API schemas of npm kubernetes-models, in a process of its own: the
 * package is ES modules only, which jest's CommonJS runtime cannot load. Reads a JSON array of objects on stdin
 * and prints, as JSON, one line per object that is not valid: its kind, name and what is wrong.
 * Run by test/support/kubernetes.ts `validate`: node --import tsx test/support/kubernetes-schemas.ts
 */
import { readFileSync } from 'node:fs';

interface Model {
  validate(): void;
}

async function problems(objects: Array<{ apiVersion: string; kind: string; metadata?: { name?: string } }>): Promise<string[]> {
  const found: string[] = [];
  for (const object of objects) {
    const what = `${object.kind} ${object.metadata?.name ?? '(unnamed)'}`;
    try {
      const models = (await import(`kubernetes-models/${object.apiVersion}`)) as Record<string, (new (data: unknown) => Model) | undefined>;
      const Constructor = models[object.kind];
      if (!Constructor) throw new Error(`kubernetes-models has no ${object.apiVersion} ${object.kind}`);
      new Constructor(object).validate();
    } catch (error) {
      found.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return found;
}

void problems(JSON.parse(readFileSync(0, 'utf8')) as never).then((found) => process.stdout.write(JSON.stringify(found)));
