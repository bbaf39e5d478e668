/*
 * memory_latency.c: nanoseconds of one read of memory that is not in any
 * cache, as a call of fw_limit on a random key among many makes (its
 * counter's slot): a chain of dependent reads, each to a random 128-byte
 * line of an array as large as the counters of the bench's one-query rows.
 *
 *	memory_latency LINES
 *
 * Part of make bench (bench/run.sh); not installed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LINE_WORDS	16			/* 128 bytes, a counter's slot and more */
#define READS		20000000

int
main(int argc, char **argv)
{
	size_t		lines = (argc > 1) ? strtoul(argv[1], NULL, 10) : 0;
	uint64_t   *memory;
	size_t	   *order;
	size_t		i;
	size_t		at = 0;
	uint64_t	state = 88172645463325252ULL;
	struct timespec start, end;

	if (lines < 2)
	{
		fprintf(stderr, "usage: memory_latency LINES (at least 2)\n");
		return 2;
	}
	memory = malloc(lines * LINE_WORDS * sizeof(uint64_t));
	order = malloc(lines * sizeof(size_t));
	if (memory == NULL || order == NULL)
	{
		fprintf(stderr, "memory_latency: out of memory\n");
		return 1;
	}
	/* one cycle through every line, in a random order (xorshift, Fisher-Yates) */
	for (i = 0; i < lines; i++)
		order[i] = i;
	for (i = lines - 1; i > 0; i--)
	{
		size_t		j,
					t;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		j = state % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < lines; i++)
		memory[order[i] * LINE_WORDS] = order[(i + 1) % lines];

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < READS; i++)
		at = memory[at * LINE_WORDS];
	clock_gettime(CLOCK_MONOTONIC, &end);
	/* print "at" too, so that the reads cannot be left out */
	printf("%.1f %zu\n",
		   ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / READS, at);
	return 0;
}
