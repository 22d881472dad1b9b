// Zod compiles validators with `new Function` unless told not to; a view's content security
// policy forbids that (no 'unsafe-eval'), so schemas are interpreted instead. Imported first.
import { config } from "zod/v4/core";

config({ jitless: true });
