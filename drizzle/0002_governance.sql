CREATE TABLE "account_policies" (
	"account_id" text PRIMARY KEY NOT NULL,
	"daily_cap" bigint,
	"allowlist" text[],
	"balance_cap" bigint,
	"version" integer NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"state" text NOT NULL,
	"token_hash" text NOT NULL,
	"daily_cap" bigint,
	"allowlist" text[],
	"per_call_max" bigint,
	"version" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "support_problems" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"agent_id" text,
	"category" text NOT NULL,
	"slug" text,
	"call_id" text,
	"error_code" text,
	"http_status" integer,
	"summary" text NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "support_updates" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"problem_id" text NOT NULL,
	"status" text NOT NULL,
	"note" text,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "support_updates" ADD CONSTRAINT "support_updates_problem_id_support_problems_id_fk" FOREIGN KEY ("problem_id") REFERENCES "public"."support_problems"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agents_account" ON "agents" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "support_problems_account" ON "support_problems" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "support_updates_problem" ON "support_updates" USING btree ("problem_id","id");