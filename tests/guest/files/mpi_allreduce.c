/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svm-mpi-allreduce: the MPI program of the headline job. Every rank
 * contributes its rank id to an MPI_Allreduce(MPI_SUM) and checks the sum
 * against size * (size - 1) / 2, then sends a buffer of RING_BYTES to the
 * next rank and receives one from the previous (a ring of MPI_Sendrecv:
 * point to point, large enough for the rendezvous protocol) and checks
 * every byte of the sender's pattern. One line per check and rank; rank 0
 * also names the MPI library. Exits 0 only if both of this rank's checks
 * are right.
 *
 *   svm-mpi-allreduce abort   instead, the last rank calls MPI_Abort(3)
 *                             while the others wait in MPI_Barrier: the
 *                             whole step must end, not hang
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define RING_BYTES (256 * 1024)

/* Byte @i of the buffer rank @rank sends. */
static unsigned char ring_byte(int rank, size_t i)
{
	return (unsigned char)(rank * 31 + i * 7 + (i >> 8));
}

/* Rank -> rank + 1 around the ring; returns the first wrong byte's offset,
 * or -1 when all RING_BYTES from the previous rank are right. */
static long ring_exchange(int rank, int size, int *from)
{
	static unsigned char out[RING_BYTES], in[RING_BYTES];

	*from = (rank + size - 1) % size;
	for (size_t i = 0; i < RING_BYTES; i++)
		out[i] = ring_byte(rank, i);
	MPI_Sendrecv(out, RING_BYTES, MPI_BYTE, (rank + 1) % size, 7, in,
		     RING_BYTES, MPI_BYTE, *from, 7, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	for (size_t i = 0; i < RING_BYTES; i++)
		if (in[i] != ring_byte(*from, i))
			return (long)i;
	return -1;
}

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int rank, size, sum = -1, want, len, from;
	long bad;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	if (rank == 0) {
		MPI_Get_library_version(lib, &len);
		/* The first line of MPICH's text is its version. */
		lib[strcspn(lib, "\n")] = '\0';
		printf("mpi: %s\n", lib);
	}
	if (argc > 1 && strcmp(argv[1], "abort") == 0) {
		if (rank == size - 1) {
			printf("mpi: rank %d of %d: MPI_Abort(3)\n", rank,
			       size);
			fflush(stdout);
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		printf("mpi: rank %d of %d: passed a barrier a rank never reached\n",
		       rank, size);
		MPI_Finalize();
		return 1;
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	want = size * (size - 1) / 2;
	printf("mpi: rank %d of %d on %s: allreduce sum of ranks %d, expected %d: %s\n",
	       rank, size, host, sum, want, sum == want ? "ok" : "WRONG");
	bad = ring_exchange(rank, size, &from);
	if (bad < 0)
		printf("mpi: rank %d of %d on %s: sendrecv %d bytes from rank %d: ok\n",
		       rank, size, host, RING_BYTES, from);
	else
		printf("mpi: rank %d of %d on %s: sendrecv %d bytes from rank %d: WRONG at byte %ld\n",
		       rank, size, host, RING_BYTES, from, bad);
	fflush(stdout);
	MPI_Finalize();
	return sum == want && bad < 0 ? 0 : 1;
}
