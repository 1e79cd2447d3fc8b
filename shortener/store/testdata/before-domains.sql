--
-- PostgreSQL database dump
--

\restrict z63GgZIrVgRk1E7oosl7BIZG1CiBxdGdWWoeMi8lAI415LCxbB6jsTmnzAmXaHt

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: pg_trgm; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;


--
-- Name: EXTENSION pg_trgm; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';


--
-- Name: shortener_link_click_totals_count(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.shortener_link_click_totals_count() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    dp bigint := NEW.people;
    db bigint := NEW.bots;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        dp := NEW.people - OLD.people;
        db := NEW.bots - OLD.bots;
    END IF;
    INSERT INTO shortener_link_click_totals AS t (code, people, bots) VALUES (NEW.code, dp, db)
    ON CONFLICT (code) DO UPDATE SET people = t.people + excluded.people, bots = t.bots + excluded.bots;
    RETURN NULL;
END
$$;


--
-- Name: shortener_link_search_text(text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.shortener_link_search_text(code text, long_url text, title text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT code || chr(1) || long_url || chr(1) || title $$;


--
-- Name: shortener_link_tags_sync(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.shortener_link_tags_sync() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM shortener_link_tags g
        WHERE g.tag = ANY (OLD.tags) AND g.created_at = OLD.created_at AND g.code = OLD.code
          AND (TG_OP = 'DELETE' OR NOT g.tag = ANY (NEW.tags));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO shortener_link_tags (tag, created_at, code)
        SELECT DISTINCT t, NEW.created_at, NEW.code FROM unnest(NEW.tags) AS t
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: shortener_click_batches; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_click_batches (
    id text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: shortener_event_marks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_event_marks (
    name text NOT NULL,
    at timestamp with time zone NOT NULL
);


--
-- Name: shortener_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_events (
    tx xid8 DEFAULT pg_current_xact_id() NOT NULL,
    seq bigint NOT NULL,
    id text DEFAULT ('evt_'::text || replace((gen_random_uuid())::text, '-'::text, ''::text)) NOT NULL,
    type text NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    code text NOT NULL COLLATE pg_catalog."C",
    data jsonb NOT NULL
);


--
-- Name: shortener_events_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.shortener_events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.shortener_events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: shortener_id_blocks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_id_blocks (
    singleton boolean DEFAULT true NOT NULL,
    next_id bigint NOT NULL,
    CONSTRAINT shortener_id_blocks_next_id_check CHECK ((next_id >= 1)),
    CONSTRAINT shortener_id_blocks_singleton_check CHECK (singleton)
);


--
-- Name: shortener_idempotency; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_idempotency (
    scope text NOT NULL COLLATE pg_catalog."C",
    key text NOT NULL COLLATE pg_catalog."C",
    body_sha256 bytea NOT NULL,
    status smallint NOT NULL,
    body bytea NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT shortener_idempotency_body_sha256_check CHECK ((octet_length(body_sha256) = 32)),
    CONSTRAINT shortener_idempotency_key_check CHECK (((octet_length(key) >= 1) AND (octet_length(key) <= 255)))
);


--
-- Name: shortener_link_click_totals; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_click_totals (
    code text NOT NULL,
    people bigint DEFAULT 0 NOT NULL,
    bots bigint DEFAULT 0 NOT NULL,
    imported bigint DEFAULT 0 NOT NULL
);


--
-- Name: shortener_link_clicks_daily; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_clicks_daily (
    code text NOT NULL,
    day date NOT NULL,
    people bigint DEFAULT 0 NOT NULL,
    bots bigint DEFAULT 0 NOT NULL,
    visitors bytea
);


--
-- Name: shortener_link_clicks_hourly; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_clicks_hourly (
    code text NOT NULL,
    hour timestamp with time zone NOT NULL,
    people bigint DEFAULT 0 NOT NULL,
    bots bigint DEFAULT 0 NOT NULL
);


--
-- Name: shortener_link_dim_days; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_dim_days (
    code text NOT NULL,
    day date NOT NULL,
    dim text NOT NULL,
    "values" integer DEFAULT 0 NOT NULL
);


--
-- Name: shortener_link_dim_visitors; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_dim_visitors (
    code text NOT NULL,
    dim text NOT NULL,
    day date NOT NULL,
    value text NOT NULL,
    visitors bytea NOT NULL
);


--
-- Name: shortener_link_dims_daily; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_dims_daily (
    code text NOT NULL,
    dim text NOT NULL,
    day date NOT NULL,
    value text NOT NULL,
    count bigint DEFAULT 0 NOT NULL
);


--
-- Name: shortener_link_history; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_history (
    code text NOT NULL,
    version bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    key_fp text NOT NULL,
    changes jsonb NOT NULL,
    CONSTRAINT shortener_link_history_key_fp_check CHECK ((char_length(key_fp) <= 64))
);


--
-- Name: shortener_link_referrer_days; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_referrer_days (
    code text NOT NULL,
    day date NOT NULL,
    hosts integer DEFAULT 0 NOT NULL
);


--
-- Name: shortener_link_referrers_daily; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_referrers_daily (
    code text NOT NULL,
    day date NOT NULL,
    host text NOT NULL,
    count bigint DEFAULT 0 NOT NULL
);


--
-- Name: shortener_link_tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_link_tags (
    tag text NOT NULL COLLATE pg_catalog."C",
    created_at timestamp with time zone NOT NULL,
    code text NOT NULL COLLATE pg_catalog."C"
);


--
-- Name: shortener_links; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_links (
    code text NOT NULL COLLATE pg_catalog."C",
    long_url text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    revoked_at timestamp with time zone,
    seq bigint,
    title text DEFAULT ''::text NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    notes text DEFAULT ''::text NOT NULL,
    redirect_status smallint DEFAULT 0 NOT NULL,
    valid_from timestamp with time zone,
    max_clicks bigint DEFAULT 0 NOT NULL,
    forward_query boolean,
    clicks_served bigint DEFAULT 0 NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    custom boolean DEFAULT true NOT NULL,
    targeting text,
    fallback_url text DEFAULT ''::text NOT NULL
);


--
-- Name: shortener_links_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.shortener_links_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: shortener_links_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.shortener_links_seq OWNED BY public.shortener_links.seq;


--
-- Name: shortener_schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: shortener_ui_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_ui_sessions (
    id bytea NOT NULL,
    key_fingerprint text NOT NULL,
    scope smallint NOT NULL,
    signer bytea NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);


--
-- Name: shortener_visitor_salts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_visitor_salts (
    day date NOT NULL,
    salt bytea NOT NULL
);


--
-- Name: shortener_webhook_attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_webhook_attempts (
    message text NOT NULL COLLATE pg_catalog."C",
    n integer NOT NULL,
    at timestamp with time zone NOT NULL,
    status integer NOT NULL,
    latency_us bigint NOT NULL,
    body bytea NOT NULL,
    error text NOT NULL
);


--
-- Name: shortener_webhook_endpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_webhook_endpoints (
    id text NOT NULL COLLATE pg_catalog."C",
    url text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    types text[] NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    codes text[] DEFAULT '{}'::text[] NOT NULL,
    disabled boolean DEFAULT false NOT NULL,
    disabled_reason text DEFAULT ''::text NOT NULL,
    keys jsonb NOT NULL,
    batch integer DEFAULT 0 NOT NULL,
    batch_wait_ms bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    cursor_tx bigint DEFAULT 0 NOT NULL,
    cursor_seq bigint DEFAULT 0 NOT NULL,
    lease_owner text DEFAULT ''::text NOT NULL,
    lease_until timestamp with time zone
);


--
-- Name: shortener_webhook_messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shortener_webhook_messages (
    id text NOT NULL COLLATE pg_catalog."C",
    endpoint text NOT NULL,
    type text NOT NULL,
    at timestamp with time zone NOT NULL,
    body bytea NOT NULL,
    events integer NOT NULL,
    state text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_at timestamp with time zone NOT NULL,
    series integer DEFAULT 0 NOT NULL,
    made_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: shortener_links seq; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_links ALTER COLUMN seq SET DEFAULT nextval('public.shortener_links_seq'::regclass);


--
-- Data for Name: shortener_click_batches; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_click_batches VALUES ('fixture-a1b2c3', '2026-12-06 10:54:44.05466+00');
INSERT INTO public.shortener_click_batches VALUES ('fixture-gone42', '2026-12-06 10:54:44.05466+00');
INSERT INTO public.shortener_click_batches VALUES ('fixture-q7R2t9', '2026-12-06 10:54:44.05466+00');
INSERT INTO public.shortener_click_batches VALUES ('fixture-spring-sale', '2026-12-06 10:54:44.05466+00');


--
-- Data for Name: shortener_event_marks; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_events; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_id_blocks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_id_blocks VALUES (true, 1);


--
-- Data for Name: shortener_idempotency; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_link_click_totals; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_link_click_totals VALUES ('a1b2c3', 6, 1, 0);
INSERT INTO public.shortener_link_click_totals VALUES ('gone42', 2, 0, 0);
INSERT INTO public.shortener_link_click_totals VALUES ('q7R2t9', 9, 3, 0);
INSERT INTO public.shortener_link_click_totals VALUES ('spring-sale', 3, 0, 0);


--
-- Data for Name: shortener_link_clicks_daily; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_link_clicks_hourly; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_link_clicks_hourly VALUES ('a1b2c3', '2026-11-03 10:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('a1b2c3', '2026-11-03 11:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('a1b2c3', '2026-11-03 12:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('a1b2c3', '2026-11-03 13:00:00+00', 0, 1);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('a1b2c3', '2026-11-03 14:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('a1b2c3', '2026-11-03 15:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('a1b2c3', '2026-11-03 16:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('gone42', '2026-11-03 10:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('gone42', '2026-11-03 11:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 10:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 11:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 12:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 13:00:00+00', 0, 1);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 14:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 15:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 16:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 17:00:00+00', 0, 1);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 18:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 19:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 20:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('q7R2t9', '2026-11-03 21:00:00+00', 0, 1);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('spring-sale', '2026-11-03 10:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('spring-sale', '2026-11-03 11:00:00+00', 1, 0);
INSERT INTO public.shortener_link_clicks_hourly VALUES ('spring-sale', '2026-11-03 12:00:00+00', 1, 0);


--
-- Data for Name: shortener_link_dim_days; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_link_dim_days VALUES ('a1b2c3', '2026-11-03', 'browser', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('a1b2c3', '2026-11-03', 'city', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('a1b2c3', '2026-11-03', 'country', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('a1b2c3', '2026-11-03', 'device', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('a1b2c3', '2026-11-03', 'os', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('a1b2c3', '2026-11-03', 'region', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('a1b2c3', '2026-11-03', 'source', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('gone42', '2026-11-03', 'browser', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('gone42', '2026-11-03', 'city', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('gone42', '2026-11-03', 'country', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('gone42', '2026-11-03', 'device', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('gone42', '2026-11-03', 'os', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('gone42', '2026-11-03', 'region', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('gone42', '2026-11-03', 'source', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('q7R2t9', '2026-11-03', 'browser', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('q7R2t9', '2026-11-03', 'city', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('q7R2t9', '2026-11-03', 'country', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('q7R2t9', '2026-11-03', 'device', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('q7R2t9', '2026-11-03', 'os', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('q7R2t9', '2026-11-03', 'region', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('q7R2t9', '2026-11-03', 'source', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('spring-sale', '2026-11-03', 'browser', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('spring-sale', '2026-11-03', 'city', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('spring-sale', '2026-11-03', 'country', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('spring-sale', '2026-11-03', 'device', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('spring-sale', '2026-11-03', 'os', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('spring-sale', '2026-11-03', 'region', 1);
INSERT INTO public.shortener_link_dim_days VALUES ('spring-sale', '2026-11-03', 'source', 1);


--
-- Data for Name: shortener_link_dim_visitors; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_link_dims_daily; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_link_dims_daily VALUES ('a1b2c3', 'browser', '2026-11-03', 'unknown', 7);
INSERT INTO public.shortener_link_dims_daily VALUES ('a1b2c3', 'city', '2026-11-03', 'unknown', 7);
INSERT INTO public.shortener_link_dims_daily VALUES ('a1b2c3', 'country', '2026-11-03', 'unknown', 7);
INSERT INTO public.shortener_link_dims_daily VALUES ('a1b2c3', 'device', '2026-11-03', 'unknown', 7);
INSERT INTO public.shortener_link_dims_daily VALUES ('a1b2c3', 'os', '2026-11-03', 'unknown', 7);
INSERT INTO public.shortener_link_dims_daily VALUES ('a1b2c3', 'region', '2026-11-03', 'unknown', 7);
INSERT INTO public.shortener_link_dims_daily VALUES ('a1b2c3', 'source', '2026-11-03', 'link', 7);
INSERT INTO public.shortener_link_dims_daily VALUES ('gone42', 'browser', '2026-11-03', 'unknown', 2);
INSERT INTO public.shortener_link_dims_daily VALUES ('gone42', 'city', '2026-11-03', 'unknown', 2);
INSERT INTO public.shortener_link_dims_daily VALUES ('gone42', 'country', '2026-11-03', 'unknown', 2);
INSERT INTO public.shortener_link_dims_daily VALUES ('gone42', 'device', '2026-11-03', 'unknown', 2);
INSERT INTO public.shortener_link_dims_daily VALUES ('gone42', 'os', '2026-11-03', 'unknown', 2);
INSERT INTO public.shortener_link_dims_daily VALUES ('gone42', 'region', '2026-11-03', 'unknown', 2);
INSERT INTO public.shortener_link_dims_daily VALUES ('gone42', 'source', '2026-11-03', 'link', 2);
INSERT INTO public.shortener_link_dims_daily VALUES ('q7R2t9', 'browser', '2026-11-03', 'unknown', 12);
INSERT INTO public.shortener_link_dims_daily VALUES ('q7R2t9', 'city', '2026-11-03', 'unknown', 12);
INSERT INTO public.shortener_link_dims_daily VALUES ('q7R2t9', 'country', '2026-11-03', 'unknown', 12);
INSERT INTO public.shortener_link_dims_daily VALUES ('q7R2t9', 'device', '2026-11-03', 'unknown', 12);
INSERT INTO public.shortener_link_dims_daily VALUES ('q7R2t9', 'os', '2026-11-03', 'unknown', 12);
INSERT INTO public.shortener_link_dims_daily VALUES ('q7R2t9', 'region', '2026-11-03', 'unknown', 12);
INSERT INTO public.shortener_link_dims_daily VALUES ('q7R2t9', 'source', '2026-11-03', 'link', 12);
INSERT INTO public.shortener_link_dims_daily VALUES ('spring-sale', 'browser', '2026-11-03', 'unknown', 3);
INSERT INTO public.shortener_link_dims_daily VALUES ('spring-sale', 'city', '2026-11-03', 'unknown', 3);
INSERT INTO public.shortener_link_dims_daily VALUES ('spring-sale', 'country', '2026-11-03', 'unknown', 3);
INSERT INTO public.shortener_link_dims_daily VALUES ('spring-sale', 'device', '2026-11-03', 'unknown', 3);
INSERT INTO public.shortener_link_dims_daily VALUES ('spring-sale', 'os', '2026-11-03', 'unknown', 3);
INSERT INTO public.shortener_link_dims_daily VALUES ('spring-sale', 'region', '2026-11-03', 'unknown', 3);
INSERT INTO public.shortener_link_dims_daily VALUES ('spring-sale', 'source', '2026-11-03', 'link', 3);


--
-- Data for Name: shortener_link_history; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_link_history VALUES ('a1b2c3', 2, '2026-11-02 11:00:00+00', 'fixturekey', '{"title": {"to": "First link (renamed)", "from": "First link"}}');
INSERT INTO public.shortener_link_history VALUES ('a1b2c3', 3, '2026-11-02 11:00:00+00', 'fixturekey', '{"tags": {"to": ["docs", "launch", "edited"], "from": ["docs", "launch"]}, "long_url": {"to": "https://example.com/one-v2", "from": "https://example.com/one"}}');
INSERT INTO public.shortener_link_history VALUES ('spring-sale', 2, '2026-11-02 11:00:00+00', 'fixturekey', '{"notes": {"to": "ends 2031", "from": null}, "expires_at": {"to": "2031-01-01T00:00:00Z", "from": null}}');


--
-- Data for Name: shortener_link_referrer_days; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_link_referrer_days VALUES ('a1b2c3', '2026-11-03', 1);
INSERT INTO public.shortener_link_referrer_days VALUES ('gone42', '2026-11-03', 1);
INSERT INTO public.shortener_link_referrer_days VALUES ('q7R2t9', '2026-11-03', 1);
INSERT INTO public.shortener_link_referrer_days VALUES ('spring-sale', '2026-11-03', 1);


--
-- Data for Name: shortener_link_referrers_daily; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_link_referrers_daily VALUES ('a1b2c3', '2026-11-03', 'news.example', 7);
INSERT INTO public.shortener_link_referrers_daily VALUES ('gone42', '2026-11-03', 'news.example', 2);
INSERT INTO public.shortener_link_referrers_daily VALUES ('q7R2t9', '2026-11-03', 'news.example', 12);
INSERT INTO public.shortener_link_referrers_daily VALUES ('spring-sale', '2026-11-03', 'news.example', 3);


--
-- Data for Name: shortener_link_tags; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_link_tags VALUES ('docs', '2026-11-02 10:00:00+00', 'a1b2c3');
INSERT INTO public.shortener_link_tags VALUES ('launch', '2026-11-02 10:00:00+00', 'a1b2c3');
INSERT INTO public.shortener_link_tags VALUES ('marketing', '2026-11-02 10:02:00+00', 'spring-sale');
INSERT INTO public.shortener_link_tags VALUES ('edited', '2026-11-02 10:00:00+00', 'a1b2c3');


--
-- Data for Name: shortener_links; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_links VALUES ('Zx9Yw8', 'https://example.com/two?q=1', '2026-11-02 10:01:00+00', '2031-01-01 00:00:00+00', NULL, 2, '', '{}', '', 0, NULL, 0, NULL, 0, 1, false, NULL, '');
INSERT INTO public.shortener_links VALUES ('q7R2t9', 'https://example.org/capped', '2026-11-02 10:03:00+00', NULL, NULL, 4, '', '{}', 'capped at 100', 0, NULL, 100, NULL, 0, 1, false, NULL, '');
INSERT INTO public.shortener_links VALUES ('m5N6p7', 'https://example.com/plain', '2026-11-02 10:05:00+00', NULL, NULL, 6, '', '{}', '', 0, NULL, 0, NULL, 0, 1, false, NULL, '');
INSERT INTO public.shortener_links VALUES ('a1b2c3', 'https://example.com/one-v2', '2026-11-02 10:00:00+00', NULL, NULL, 1, 'First link (renamed)', '{docs,launch,edited}', 'made before domains', 0, NULL, 0, NULL, 0, 3, false, NULL, '');
INSERT INTO public.shortener_links VALUES ('spring-sale', 'https://shop.example.com/sale', '2026-11-02 10:02:00+00', '2031-01-01 00:00:00+00', NULL, 3, 'Spring sale', '{marketing}', 'ends 2031', 0, NULL, 0, NULL, 0, 2, true, NULL, '');
INSERT INTO public.shortener_links VALUES ('gone42', 'https://example.net/old', '2026-11-02 10:04:00+00', NULL, '2026-11-02 12:00:00+00', 5, 'To be revoked', '{}', '', 0, NULL, 0, NULL, 0, 2, false, NULL, '');


--
-- Data for Name: shortener_schema_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.shortener_schema_migrations VALUES (1, 'links', '2026-12-06 10:54:43.973496+00');
INSERT INTO public.shortener_schema_migrations VALUES (2, 'clicks', '2026-12-06 10:54:43.976956+00');
INSERT INTO public.shortener_schema_migrations VALUES (3, 'click_bounds', '2026-12-06 10:54:43.981987+00');
INSERT INTO public.shortener_schema_migrations VALUES (4, 'link_seq', '2026-12-06 10:54:43.988831+00');
INSERT INTO public.shortener_schema_migrations VALUES (5, 'link_metadata', '2026-12-06 10:54:43.990584+00');
INSERT INTO public.shortener_schema_migrations VALUES (6, 'link_list', '2026-12-06 10:54:43.991991+00');
INSERT INTO public.shortener_schema_migrations VALUES (7, 'link_rules', '2026-12-06 10:54:43.999605+00');
INSERT INTO public.shortener_schema_migrations VALUES (8, 'link_history', '2026-12-06 10:54:44.001008+00');
INSERT INTO public.shortener_schema_migrations VALUES (9, 'idempotency_reuse', '2026-12-06 10:54:44.003305+00');
INSERT INTO public.shortener_schema_migrations VALUES (10, 'link_tags', '2026-12-06 10:54:44.00653+00');
INSERT INTO public.shortener_schema_migrations VALUES (11, 'click_totals_order', '2026-12-06 10:54:44.009925+00');
INSERT INTO public.shortener_schema_migrations VALUES (12, 'clicks_daily', '2026-12-06 10:54:44.011397+00');
INSERT INTO public.shortener_schema_migrations VALUES (13, 'visitor_salts', '2026-12-06 10:54:44.014019+00');
INSERT INTO public.shortener_schema_migrations VALUES (14, 'clicks_dims', '2026-12-06 10:54:44.015993+00');
INSERT INTO public.shortener_schema_migrations VALUES (15, 'secrets', '2026-12-06 10:54:44.021156+00');
INSERT INTO public.shortener_schema_migrations VALUES (16, 'click_baselines', '2026-12-06 10:54:44.023362+00');
INSERT INTO public.shortener_schema_migrations VALUES (17, 'ui_sessions', '2026-12-06 10:54:44.025457+00');
INSERT INTO public.shortener_schema_migrations VALUES (18, 'link_targeting', '2026-12-06 10:54:44.029069+00');
INSERT INTO public.shortener_schema_migrations VALUES (19, 'link_events', '2026-12-06 10:54:44.030244+00');
INSERT INTO public.shortener_schema_migrations VALUES (20, 'clicks_dim_visitors', '2026-12-06 10:54:44.033558+00');
INSERT INTO public.shortener_schema_migrations VALUES (21, 'webhooks', '2026-12-06 10:54:44.036179+00');
INSERT INTO public.shortener_schema_migrations VALUES (22, 'link_expiry_events', '2026-12-06 10:54:44.043029+00');


--
-- Data for Name: shortener_ui_sessions; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_visitor_salts; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_webhook_attempts; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_webhook_endpoints; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: shortener_webhook_messages; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Name: shortener_events_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.shortener_events_seq_seq', 1, false);


--
-- Name: shortener_links_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.shortener_links_seq', 6, true);


--
-- Name: shortener_click_batches shortener_click_batches_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_click_batches
    ADD CONSTRAINT shortener_click_batches_pkey PRIMARY KEY (id);


--
-- Name: shortener_event_marks shortener_event_marks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_event_marks
    ADD CONSTRAINT shortener_event_marks_pkey PRIMARY KEY (name);


--
-- Name: shortener_events shortener_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_events
    ADD CONSTRAINT shortener_events_pkey PRIMARY KEY (tx, seq);


--
-- Name: shortener_id_blocks shortener_id_blocks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_id_blocks
    ADD CONSTRAINT shortener_id_blocks_pkey PRIMARY KEY (singleton);


--
-- Name: shortener_idempotency shortener_idempotency_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_idempotency
    ADD CONSTRAINT shortener_idempotency_pkey PRIMARY KEY (scope, key);


--
-- Name: shortener_link_click_totals shortener_link_click_totals_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_click_totals
    ADD CONSTRAINT shortener_link_click_totals_pkey PRIMARY KEY (code);


--
-- Name: shortener_link_clicks_daily shortener_link_clicks_daily_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_clicks_daily
    ADD CONSTRAINT shortener_link_clicks_daily_pkey PRIMARY KEY (code, day);


--
-- Name: shortener_link_clicks_hourly shortener_link_clicks_hourly_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_clicks_hourly
    ADD CONSTRAINT shortener_link_clicks_hourly_pkey PRIMARY KEY (code, hour);


--
-- Name: shortener_link_dim_days shortener_link_dim_days_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_dim_days
    ADD CONSTRAINT shortener_link_dim_days_pkey PRIMARY KEY (code, day, dim);


--
-- Name: shortener_link_dim_visitors shortener_link_dim_visitors_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_dim_visitors
    ADD CONSTRAINT shortener_link_dim_visitors_pkey PRIMARY KEY (code, dim, day, value);


--
-- Name: shortener_link_dims_daily shortener_link_dims_daily_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_dims_daily
    ADD CONSTRAINT shortener_link_dims_daily_pkey PRIMARY KEY (code, dim, day, value);


--
-- Name: shortener_link_history shortener_link_history_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_history
    ADD CONSTRAINT shortener_link_history_pkey PRIMARY KEY (code, version);


--
-- Name: shortener_link_referrer_days shortener_link_referrer_days_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_referrer_days
    ADD CONSTRAINT shortener_link_referrer_days_pkey PRIMARY KEY (code, day);


--
-- Name: shortener_link_referrers_daily shortener_link_referrers_daily_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_referrers_daily
    ADD CONSTRAINT shortener_link_referrers_daily_pkey PRIMARY KEY (code, day, host);


--
-- Name: shortener_link_tags shortener_link_tags_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_link_tags
    ADD CONSTRAINT shortener_link_tags_pkey PRIMARY KEY (tag, created_at, code);


--
-- Name: shortener_links shortener_links_clicks_served; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_clicks_served CHECK ((clicks_served >= 0)) NOT VALID;


--
-- Name: shortener_links shortener_links_fallback_url; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_fallback_url CHECK ((octet_length(fallback_url) <= 2048)) NOT VALID;


--
-- Name: shortener_links shortener_links_max_clicks; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_max_clicks CHECK (((max_clicks >= 0) AND (max_clicks <= '1000000000000'::bigint))) NOT VALID;


--
-- Name: shortener_links shortener_links_notes_len; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_notes_len CHECK ((char_length(notes) <= 2000)) NOT VALID;


--
-- Name: shortener_links shortener_links_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_links
    ADD CONSTRAINT shortener_links_pkey PRIMARY KEY (code);


--
-- Name: shortener_links shortener_links_redirect_status; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_redirect_status CHECK ((redirect_status = ANY (ARRAY[0, 301, 302, 307, 308]))) NOT VALID;


--
-- Name: shortener_links shortener_links_tags_len; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_tags_len CHECK ((cardinality(tags) <= 20)) NOT VALID;


--
-- Name: shortener_links shortener_links_targeting; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_targeting CHECK ((octet_length(targeting) <= 65536)) NOT VALID;


--
-- Name: shortener_links shortener_links_title_len; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_title_len CHECK ((char_length(title) <= 200)) NOT VALID;


--
-- Name: shortener_links shortener_links_valid_from; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.shortener_links
    ADD CONSTRAINT shortener_links_valid_from CHECK ((valid_from < expires_at)) NOT VALID;


--
-- Name: shortener_schema_migrations shortener_schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_schema_migrations
    ADD CONSTRAINT shortener_schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: shortener_ui_sessions shortener_ui_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_ui_sessions
    ADD CONSTRAINT shortener_ui_sessions_pkey PRIMARY KEY (id);


--
-- Name: shortener_visitor_salts shortener_visitor_salts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_visitor_salts
    ADD CONSTRAINT shortener_visitor_salts_pkey PRIMARY KEY (day);


--
-- Name: shortener_webhook_attempts shortener_webhook_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_webhook_attempts
    ADD CONSTRAINT shortener_webhook_attempts_pkey PRIMARY KEY (message, n);


--
-- Name: shortener_webhook_endpoints shortener_webhook_endpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_webhook_endpoints
    ADD CONSTRAINT shortener_webhook_endpoints_pkey PRIMARY KEY (id);


--
-- Name: shortener_webhook_messages shortener_webhook_messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_webhook_messages
    ADD CONSTRAINT shortener_webhook_messages_pkey PRIMARY KEY (id);


--
-- Name: shortener_click_batches_applied_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_click_batches_applied_at ON public.shortener_click_batches USING btree (applied_at);


--
-- Name: shortener_events_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_events_at ON public.shortener_events USING btree (at);


--
-- Name: shortener_idempotency_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_idempotency_created ON public.shortener_idempotency USING btree (created_at);


--
-- Name: shortener_link_click_totals_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_click_totals_order ON public.shortener_link_click_totals USING btree ((((people + bots) + imported)), code COLLATE "C");


--
-- Name: shortener_link_clicks_daily_day; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_clicks_daily_day ON public.shortener_link_clicks_daily USING btree (day);


--
-- Name: shortener_link_clicks_hourly_hour; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_clicks_hourly_hour ON public.shortener_link_clicks_hourly USING btree (hour);


--
-- Name: shortener_link_dim_days_day; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_dim_days_day ON public.shortener_link_dim_days USING btree (day);


--
-- Name: shortener_link_dim_visitors_day; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_dim_visitors_day ON public.shortener_link_dim_visitors USING btree (day);


--
-- Name: shortener_link_dims_daily_day; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_dims_daily_day ON public.shortener_link_dims_daily USING btree (day);


--
-- Name: shortener_link_dims_daily_dim_day; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_dims_daily_dim_day ON public.shortener_link_dims_daily USING btree (dim, day);


--
-- Name: shortener_link_referrer_days_day; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_referrer_days_day ON public.shortener_link_referrer_days USING btree (day);


--
-- Name: shortener_link_referrers_daily_day; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_link_referrers_daily_day ON public.shortener_link_referrers_daily USING btree (day);


--
-- Name: shortener_links_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_links_created ON public.shortener_links USING btree (created_at, code);


--
-- Name: shortener_links_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_links_expiry ON public.shortener_links USING btree (expires_at) WHERE (expires_at IS NOT NULL);


--
-- Name: shortener_links_reuse; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_links_reuse ON public.shortener_links USING hash (long_url) WHERE ((NOT custom) AND (revoked_at IS NULL));


--
-- Name: shortener_links_revoked_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_links_revoked_created ON public.shortener_links USING btree (created_at, code) WHERE (revoked_at IS NOT NULL);


--
-- Name: shortener_links_search; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_links_search ON public.shortener_links USING gin (public.shortener_link_search_text(code, long_url, title) COLLATE "default" public.gin_trgm_ops);


--
-- Name: shortener_links_seq_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX shortener_links_seq_key ON public.shortener_links USING btree (seq) WHERE (seq IS NOT NULL);


--
-- Name: shortener_links_tags; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_links_tags ON public.shortener_links USING gin (tags);


--
-- Name: shortener_ui_sessions_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_ui_sessions_expiry ON public.shortener_ui_sessions USING btree (expires_at);


--
-- Name: shortener_ui_sessions_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_ui_sessions_key ON public.shortener_ui_sessions USING btree (key_fingerprint, created_at);


--
-- Name: shortener_webhook_messages_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_webhook_messages_due ON public.shortener_webhook_messages USING btree (endpoint, next_at) WHERE (state = 'pending'::text);


--
-- Name: shortener_webhook_messages_list; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_webhook_messages_list ON public.shortener_webhook_messages USING btree (endpoint, id);


--
-- Name: shortener_webhook_messages_made; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shortener_webhook_messages_made ON public.shortener_webhook_messages USING btree (made_at);


--
-- Name: shortener_link_clicks_hourly shortener_link_click_totals_count; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shortener_link_click_totals_count AFTER INSERT OR UPDATE OF people, bots ON public.shortener_link_clicks_hourly FOR EACH ROW EXECUTE FUNCTION public.shortener_link_click_totals_count();


--
-- Name: shortener_links shortener_link_tags_sync; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shortener_link_tags_sync AFTER INSERT OR DELETE OR UPDATE OF tags ON public.shortener_links FOR EACH ROW EXECUTE FUNCTION public.shortener_link_tags_sync();


--
-- Name: shortener_webhook_attempts shortener_webhook_attempts_message_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_webhook_attempts
    ADD CONSTRAINT shortener_webhook_attempts_message_fkey FOREIGN KEY (message) REFERENCES public.shortener_webhook_messages(id) ON DELETE CASCADE;


--
-- Name: shortener_webhook_messages shortener_webhook_messages_endpoint_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shortener_webhook_messages
    ADD CONSTRAINT shortener_webhook_messages_endpoint_fkey FOREIGN KEY (endpoint) REFERENCES public.shortener_webhook_endpoints(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

\unrestrict z63GgZIrVgRk1E7oosl7BIZG1CiBxdGdWWoeMi8lAI415LCxbB6jsTmnzAmXaHt

