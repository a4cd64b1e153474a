CREATE TABLE "mandates" (
	"account_id" text PRIMARY KEY NOT NULL,
	"enabled" boolean NOT NULL,
	"threshold" bigint,
	"refill" bigint,
	"ceiling" bigint,
	"card_brand" text,
	"card_last4" text,
	"gateway" text,
	"gateway_customer" text,
	"reason" text NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"version" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "parked_payments" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"charge_id" text NOT NULL,
	"credits" bigint NOT NULL,
	"kind" text NOT NULL,
	"gateway" text NOT NULL,
	"state" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"decided_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "parked_payments_account" ON "parked_payments" USING btree ("account_id");