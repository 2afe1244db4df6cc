/** Escaping text for HTML, in one place for the report's files. */

/**
 * Escapes `text` for HTML text and attribute values (node and model ids come from user files).
 * @example escapeHtml('<img src=x>') // '&lt;img src=x&gt;'
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}
