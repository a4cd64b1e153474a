ALTER TABLE "agents" ADD COLUMN "parent_id" text;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "depth" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "budget" bigint;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "expires_at" timestamp with time zone;