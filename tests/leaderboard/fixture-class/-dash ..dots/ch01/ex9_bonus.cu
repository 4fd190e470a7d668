// Not one of the chapter's files: ignored, never built.
#error this file must never be compiled
