CREATE TABLE "provider_bill_rows" (
	"day" date NOT NULL,
	"provider" text NOT NULL,
	"model" text NOT NULL,
	"ours_input" bigint NOT NULL,
	"ours_cached" bigint NOT NULL,
	"ours_output" bigint NOT NULL,
	"theirs_input" bigint,
	"theirs_cached" bigint,
	"theirs_output" bigint,
	"drift_pct" double precision,
	"status" text NOT NULL,
	"unmetered_requests" integer NOT NULL,
	CONSTRAINT "provider_bill_rows_day_provider_model_pk" PRIMARY KEY("day","provider","model")
);
--> statement-breakpoint
CREATE TABLE "provider_bill_runs" (
	"day" date NOT NULL,
	"provider" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer NOT NULL,
	"retry_at" timestamp with time zone,
	"error" text,
	"checked_at" timestamp with time zone NOT NULL,
	CONSTRAINT "provider_bill_runs_day_provider_pk" PRIMARY KEY("day","provider")
);
--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "lane" text;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "calls_at_brin" ON "calls" USING brin ("at");