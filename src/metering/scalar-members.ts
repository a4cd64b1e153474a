/**
 * What may follow a member to the end of a JSON object for that member to be provably the object's
 * own (and its last `usage`): members with a scalar value — a string without escapes, a number,
 * true, false, null — none of them another `usage`, then the closing brace (whitespace allowed
 * between tokens). Nothing can open or close between the member and that brace, and the quotes
 * are not escaped, so the member is not inside a string. Used on a JSON answer's end
 * (answer-tail.ts) and on an SSE event's text (injected-usage.ts), whose byte form is
 * injected-usage.ts' scalarMembersToEnd.
 */
// JSON's whitespace only (\s would also take U+00A0 and the like, which JSON.parse refuses).
export const SCALAR_MEMBERS_TO_END = /^[ \t\n\r]*(?:,[ \t\n\r]*"(?!usage")[^"\\]+"[ \t\n\r]*:[ \t\n\r]*(?:"[^"\\]*"|null|true|false|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)[ \t\n\r]*)*\}[ \t\n\r]*$/
