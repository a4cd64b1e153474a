ALTER TABLE "proposals" ADD COLUMN "for_s" integer;--> statement-breakpoint
ALTER TABLE "proposals" ADD COLUMN "lapses_at" timestamp with time zone;