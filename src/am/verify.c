/*
 * verify.c
 *	  gpuidx_verify(index): placeholder until the full check lands.
 */
#include "postgres.h"

#include "am/gpuidx_am.h"

GPUIDX_FUNCTION(gpuidx_verify);

Datum
gpuidx_verify(PG_FUNCTION_ARGS)
{
	PG_RETURN_NULL();
}
