-- The application's own V1, beside which the library's V1..V3 must migrate without a clash.
CREATE TABLE application_things (id bigint PRIMARY KEY);
