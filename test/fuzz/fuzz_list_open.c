/*
 * fuzz_list_open.c
 *	  libFuzzer target: arbitrary bytes as one encoded list, through pl_open
 *	  (with and without the checksum, and with the checksum repaired so the
 *	  structure checks are reached), what binary input and the bytea cast do
 *	  (src/type/plio.c, list_from_untrusted: open with checksum, pl_validate),
 *	  and every decoder on whatever opens.
 */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *bytes;
	uint8_t    *shifted;
	pl_view		view;
	pl_status	plain;
	pl_status	checked;
	pl_status	repaired;
	uint64_t	seed = size >= GPUIDX_HEADER_SIZE ? pl_crc32c(0, data, size) : size;

	bytes = fuzz_copy(data, size);

	/* structure only, then as stored values are read: the checksum first */
	plain = pl_open(&view, bytes, size, 0);
	checked = pl_open(&view, bytes, size, PL_OPEN_VERIFY_CHECKSUM);
	/* the checksum is verified before any other field is believed */
	FUZZ_CHECK(checked == plain || (checked == PL_ERR_CHECKSUM && plain != PL_ERR_TRUNCATED),
			   "open: %s without the checksum, %s with it",
			   pl_status_message(plain), pl_status_message(checked));
	if (checked == PL_OK)
		fuzz_exercise_view(&view, seed);

	/* a misaligned copy is refused before anything is read */
	shifted = fuzz_alloc(size + 4);
	if (size > 0)
		memcpy(shifted + 1 + (seed & 1), data, size);
	FUZZ_CHECK(pl_open(&view, shifted + 1 + (seed & 1), size, PL_OPEN_VERIFY_CHECKSUM) == PL_ERR_ALIGNMENT,
			   "misaligned bytes opened");
	free(shifted);

	/*
	 * The checksum repaired: the fuzzer rarely produces a valid CRC, and the
	 * structure checks and decoders are what untrusted bytes must not get
	 * past.  The result must be what the structure checks alone said.
	 */
	fuzz_fix_checksum(bytes, size);
	repaired = pl_open(&view, bytes, size, PL_OPEN_VERIFY_CHECKSUM);
	FUZZ_CHECK(repaired == plain, "open: %s without the checksum, %s with it repaired",
			   pl_status_message(plain), pl_status_message(repaired));
	if (repaired == PL_OK)
	{
		/* postinglist_recv and the bytea cast: open with checksum, then validate */
		pl_status	valid = pl_validate(&view);

		if (valid == PL_OK)
		{
			/*
			 * Accepted as a value: every accessor must agree with the full
			 * decode, which must be strictly increasing and end on 'last'.
			 */
			uint32_t   *ids = fuzz_alloc_u32(view.count);

			FUZZ_CHECK(pl_decode(&view, ids) == PL_OK, "accepted list does not decode");
			FUZZ_CHECK(ref_sorted_distinct(ids, view.count), "accepted %s list is not strictly increasing",
					   fuzz_codec_names[view.codec]);
			fuzz_check_accessors(&view, ids, view.count, seed, "accepted list");
			free(ids);
		}
		else
			fuzz_exercise_view(&view, seed);
	}
	free(bytes);
	return 0;
}
