CREATE TABLE "accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"public_ref" text NOT NULL,
	"origin" text,
	"referred_by" text,
	"shard" smallint NOT NULL,
	"owner_token_hash" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "accounts_email_unique" UNIQUE("email"),
	CONSTRAINT "accounts_public_ref_unique" UNIQUE("public_ref")
);
--> statement-breakpoint
CREATE TABLE "calls" (
	"call_id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"agent_id" text,
	"slug" text NOT NULL,
	"charged" integer NOT NULL,
	"refunded" integer NOT NULL,
	"outcome" text NOT NULL,
	"http_status" integer,
	"latency_ms" integer NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ledger_entries" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"agent_id" text,
	"kind" text NOT NULL,
	"amount" bigint NOT NULL,
	"balance_after" bigint NOT NULL,
	"call_id" text,
	"ref_id" text,
	"target" text,
	"at" timestamp with time zone NOT NULL,
	"stream_id" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "calls_account_at" ON "calls" USING btree ("account_id","at","call_id");--> statement-breakpoint
CREATE INDEX "ledger_entries_account_at" ON "ledger_entries" USING btree ("account_id","at");