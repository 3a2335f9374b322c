/** A form field's text, trimmed; empty for a missing field or a file. */
export function formText(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value.trim() : '';
}

/** A form field's text exactly as typed (bodies keep their whitespace). */
export function formRaw(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value : '';
}
