-- Assistants (package runs/pgthreads, Assistants): the Agent Server API's
-- configured uses of a registered graph. studio_assistants holds each
-- assistant at its current version; studio_assistant_versions every
-- version ever made, so an older one can be made current again. A change
-- makes a new version numbered last_version + 1, in one statement that
-- locks the assistant's row, so concurrent changes never share a number.
CREATE TABLE studio_assistants (
    -- A UUID in canonical form; collated "C" so that ties and text
    -- orders are the bytewise orders of the memory store.
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    graph        text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    description  text,
    config       jsonb       NOT NULL,
    context      jsonb       NOT NULL,
    metadata     jsonb       NOT NULL,
    -- The current version, and the highest one made.
    version      integer     NOT NULL,
    last_version integer     NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- Searches filter by metadata containment (LangGraph Studio asks for
-- created_by=system) and by graph, newest first by default.
CREATE INDEX studio_assistants_metadata_idx ON studio_assistants USING gin (metadata jsonb_path_ops);
CREATE INDEX studio_assistants_graph_idx ON studio_assistants (graph, created_at);
CREATE INDEX studio_assistants_created_idx ON studio_assistants (created_at, id);

CREATE TABLE studio_assistant_versions (
    assistant_id text COLLATE "C" NOT NULL REFERENCES studio_assistants (id) ON DELETE CASCADE,
    version      integer     NOT NULL,
    graph        text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    description  text,
    config       jsonb       NOT NULL,
    context      jsonb       NOT NULL,
    metadata     jsonb       NOT NULL,
    -- When this version was made.
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (assistant_id, version)
);
---- create above / drop below ----
DROP TABLE studio_assistant_versions;
DROP TABLE studio_assistants;
