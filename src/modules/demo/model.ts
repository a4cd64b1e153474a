/** What the demo provider answers (it plays a third-party API, so not the error registry's body). */
import { Type as T } from '@sinclair/typebox'

export const DemoEcho = T.Object({ demo: T.Literal(true), echo: T.Unknown() })
export const DemoFailure = T.Object({ demo: T.Literal(true), message: T.String() })
