/* fixed_window--1.5--1.6.sql: hardening (issue 30) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.6'" to load this file. \quit
