import wplib as wp

wp.main(lambda t: t.fail("not written yet"))
