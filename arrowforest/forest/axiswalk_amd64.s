//go:build amd64 && !purego

#include "textflag.h"

// One level of one lane: I is the lane's node index, OFF(SP) the lane's
// row offset in keys. R10 = nodes, R11 = x; R12, R13 scratch.
// link = nodes[I].link; key = x[OFF + link>>22]; d = link & (2^22-1);
// I = key <= nodes[I].thr ? I+1 : I+d (axisWalk.step).
#define STEP(I, OFF) \
	MOVL 4(R10)(I*8), R12 \
	MOVL R12, R13 \
	SHRL $22, R13 \
	ADDL OFF(SP), R13 \
	MOVL (R11)(R13*4), R13 \
	ANDL $0x3fffff, R12 \
	CMPL R13, (R10)(I*8) \
	LEAL 1(I), R13 \
	LEAL (I)(R12*1), I \
	CMOVLLS R13, I

// STEPOR is STEP that also ORs the lane's d into R14: zero after all
// eight lanes means every lane is at its leaf.
#define STEPOR(I, OFF) \
	MOVL 4(R10)(I*8), R12 \
	MOVL R12, R13 \
	SHRL $22, R13 \
	ADDL OFF(SP), R13 \
	MOVL (R11)(R13*4), R13 \
	ANDL $0x3fffff, R12 \
	ORL R12, R14 \
	CMPL R13, (R10)(I*8) \
	LEAL 1(I), R13 \
	LEAL (I)(R12*1), I \
	CMOVLLS R13, I

// func walk8asm(nodes *anode, x *uint32, stride int, root int32, out *int32)
TEXT ·walk8asm(SB), NOSPLIT, $32-40
	MOVQ nodes+0(FP), R10
	MOVQ x+8(FP), R11
	MOVQ stride+16(FP), AX
	// row offsets of lanes 0..7 (lane 0 is 0 and needs no slot but
	// is kept for a uniform STEP)
	XORL BX, BX
	MOVL BX, 0(SP)
	ADDL AX, BX
	MOVL BX, 4(SP)
	ADDL AX, BX
	MOVL BX, 8(SP)
	ADDL AX, BX
	MOVL BX, 12(SP)
	ADDL AX, BX
	MOVL BX, 16(SP)
	ADDL AX, BX
	MOVL BX, 20(SP)
	ADDL AX, BX
	MOVL BX, 24(SP)
	ADDL AX, BX
	MOVL BX, 28(SP)
	MOVL root+24(FP), AX
	MOVL AX, BX
	MOVL AX, CX
	MOVL AX, DX
	MOVL AX, SI
	MOVL AX, DI
	MOVL AX, R8
	MOVL AX, R9

loop:
	XORL R14, R14
	STEPOR(AX, 0)
	STEPOR(BX, 4)
	STEPOR(CX, 8)
	STEPOR(DX, 12)
	STEPOR(SI, 16)
	STEPOR(DI, 20)
	STEPOR(R8, 24)
	STEPOR(R9, 28)
	TESTL R14, R14
	JEQ done
	STEP(AX, 0)
	STEP(BX, 4)
	STEP(CX, 8)
	STEP(DX, 12)
	STEP(SI, 16)
	STEP(DI, 20)
	STEP(R8, 24)
	STEP(R9, 28)
	JMP loop

done:
	MOVQ out+32(FP), R12
	MOVL AX, 0(R12)
	MOVL BX, 4(R12)
	MOVL CX, 8(R12)
	MOVL DX, 12(R12)
	MOVL SI, 16(R12)
	MOVL DI, 20(R12)
	MOVL R8, 24(R12)
	MOVL R9, 28(R12)
	RET
