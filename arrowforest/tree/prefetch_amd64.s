//go:build amd64 && !purego

#include "textflag.h"

// func prefetchRowsAsm(codes *uint8, idx *int32, n, p int)
TEXT ·prefetchRowsAsm(SB), NOSPLIT, $0-32
	MOVQ codes+0(FP), SI
	MOVQ idx+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ p+24(FP), DX
	LEAQ -1(DX), R9
loop:
	MOVLQSX (DI), AX
	IMULQ DX, AX
	ADDQ SI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 (AX)(R9*1)
	ADDQ $4, DI
	DECQ CX
	JNZ loop
	RET
