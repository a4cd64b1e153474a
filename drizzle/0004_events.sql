CREATE TABLE "event_deliveries" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"account_id" text NOT NULL,
	"channel" text NOT NULL,
	"target" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL,
	"last_attempt_at" timestamp with time zone,
	"last_response_code" integer,
	"last_error" text,
	"created_at" timestamp with time zone NOT NULL,
	"delivered_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"type" text NOT NULL,
	"data" jsonb NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "operator_chats" (
	"chat_id" text NOT NULL,
	"user_id" text NOT NULL,
	"account_id" text NOT NULL,
	"linked_at" timestamp with time zone NOT NULL,
	CONSTRAINT "operator_chats_chat_id_user_id_pk" PRIMARY KEY("chat_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"account_id" text PRIMARY KEY NOT NULL,
	"url" text NOT NULL,
	"events" text[],
	"secret" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "event_deliveries_once" ON "event_deliveries" USING btree ("event_id","channel","target");--> statement-breakpoint
CREATE INDEX "event_deliveries_due" ON "event_deliveries" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE INDEX "event_deliveries_account" ON "event_deliveries" USING btree ("account_id","channel","created_at");--> statement-breakpoint
CREATE INDEX "events_account" ON "events" USING btree ("account_id","at");--> statement-breakpoint
CREATE INDEX "operator_chats_account" ON "operator_chats" USING btree ("account_id");