# make kselftest: the selftests alone, in the debug VM.
. /lib.sh
pn_insmod || exit 1
pn_selftests
pn_rmmod
exit 0
