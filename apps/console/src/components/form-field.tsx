/**
 * Form fields that show what is wrong with them: the form's own check, or the API's 400 whose `attr` names the
 * field or a part of it (`filters__properties__values__0__key` is about `filters`). The message sits under the
 * control, which is marked invalid and described by it; an error no field of the form claims is shown for the
 * whole form by {@link FormProblem}.
 */
import type { ComponentChildren } from 'preact';
import { ApiError } from '../api/client';
import type { FieldProblem } from '../flags/create-forms';
import { Problem } from './problem';

/** What a submit left behind: undefined, a {@link FieldProblem} the form found, or the request's failure. */
export type SubmitError = unknown;

function fieldProblem(error: SubmitError): FieldProblem | undefined {
  if (error instanceof ApiError) return error.status === 400 && error.body.attr ? { attr: error.body.attr, detail: error.body.detail } : undefined;
  const problem = error as Partial<FieldProblem> | undefined;
  return typeof problem?.attr === 'string' && typeof problem.detail === 'string' ? (problem as FieldProblem) : undefined;
}

/** The message for `field`, when the error is about it. */
export function fieldError(error: SubmitError, field: string): string | undefined {
  const problem = fieldProblem(error);
  return problem !== undefined && (problem.attr === field || problem.attr.startsWith(`${field}__`)) ? problem.detail : undefined;
}

/** Attributes for the control of a field: invalid, and described by its message, when there is one. */
export interface ControlProps {
  'aria-invalid'?: true;
  'aria-describedby'?: string;
}

export function FormField({
  id,
  label,
  error,
  class: className,
  children,
}: {
  id: string;
  label: string;
  error: string | undefined;
  class?: string;
  children: (control: ControlProps) => ComponentChildren;
}) {
  const errorId = `${id}-error`;
  return (
    <div class={className ? `form-field ${className}` : 'form-field'}>
      <label>
        <span>{label}</span>
        {children(error === undefined ? {} : { 'aria-invalid': true, 'aria-describedby': errorId })}
      </label>
      <FieldMessage id={errorId} error={error} />
    </div>
  );
}

/** A field's message on its own, for a group of controls (its id describes the group). */
export function FieldMessage({ id, error }: { id: string; error: string | undefined }) {
  return error === undefined ? null : (
    <p id={id} class="field-error" role="alert">
      {error}
    </p>
  );
}

/** The error when none of `fields` shows it: a failed request, a refusal about another field. */
export function FormProblem({ error, fields }: { error: SubmitError; fields: readonly string[] }) {
  if (error === undefined || fields.some((field) => fieldError(error, field) !== undefined)) return null;
  return <Problem error={error} />;
}
