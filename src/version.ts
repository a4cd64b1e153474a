/** The interface version (the spec's), shown by /status and /openapi.json. */
export const VERSION = '2.0.0'
