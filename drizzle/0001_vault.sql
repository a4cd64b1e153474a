CREATE TABLE "vault_keys" (
	"account_id" text NOT NULL,
	"provider" text NOT NULL,
	"ciphertext" "bytea" NOT NULL,
	"nonce" "bytea" NOT NULL,
	"wrapped_dek" "bytea" NOT NULL,
	"dek_nonce" "bytea" NOT NULL,
	"master_key_id" text NOT NULL,
	"last4" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "vault_keys_account_id_provider_pk" PRIMARY KEY("account_id","provider")
);
